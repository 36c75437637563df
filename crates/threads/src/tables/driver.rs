//! The driver for table workloads: loads the database, runs worker threads through warm-up,
//! measurement and cool-down under any [`TableProtocol`], and checks the workload's
//! consistency conditions afterwards.
//!
//! ```text
//!  direct :  worker t:  generate(rng, t) ─> run (retry on abort, backoff) ─> record ─> ...
//!
//!  reorder:  worker t:  pop its queue ─> run (retry on abort) ─> pop ...
//!                       queue empty: build the next batch (every worker can build):
//!                       generate `batch` txns ─> footprints ─> sticky ThreadAssigner (§4.2:
//!                       conflicting txns to the same thread, batch after batch) ─> each
//!                       share to its queue; a thread far behind: take over its oldest share
//!                       (see [`crate::batch_front`])
//!  main:     sleep, report progress every PROGRESS_MS; with `--batch auto`, close a
//!            measurement window and set the next batch size (see below); then stop, join, merge
//!  after:    quiesce every worker; workload.check through one read-only attempt
//! ```
//!
//! ## The reorder batch size
//!
//! A larger batch gives the thread-aware assignment more transactions to group (fewer
//! cross-thread conflicts) but costs more to assign (the conflict graph and the assignment
//! grow as the square of the batch, so per transaction linearly) and makes a transaction wait
//! longer in its share. The best size moves with the workload and its skew, so the batch is a
//! [`BatchSize`] knob: a number fixes it; `auto` (the default) has the main thread tune it
//! online with the batching crate's controller ([`ordo_batching::Tuner`]), as the pipeline and
//! the PostgreSQL tier tune theirs:
//!
//! ```text
//!  workers:  commit / abort ─> own WorkerCounts (relaxed stores, one cache line each)
//!                                   │ summed by the main thread when a window may close
//!  main:     BatchTuner: window ≥ window_us, and until it holds window_commits_min commits
//!            (or lasts window_us_max) ─> WindowObservation ─> Tuner ─> size
//!                                   │ BatchFront.batch_size (an atomic)
//!  workers:  the next batch built reads it
//! ```
//!
//! The signal is commits when they commit (with a log, before the log acknowledges them: the
//! batch size changes execution, not the log's epochs, which would make windows lumpy). The
//! search stays within `threads` (every thread gets a share) and
//! [`ReorderTuning::batch_per_thread_max`] per thread (at most [`REORDER_BATCH_MAX`]), and
//! starts at [`REORDER_BATCH_PER_THREAD`] per thread. A size set mid-run takes effect at the
//! next batch built, within microseconds of a window of tens of milliseconds; batches already
//! queued run as they were built. Results record the sizes chosen over time.
//!
//! With a write-ahead log (`wal`, `durability`), commits are acknowledged by the log, not at
//! commit: each worker queues its committed transactions (epoch, start time, history entry;
//! at most [`UNACKNOWLEDGED_PER_WORKER_MAX`]) and acknowledges the front as the log's durable
//! epoch passes it; a checkpoint thread takes fuzzy checkpoints; acknowledged history
//! entries can be streamed to the caller as they come ([`RunHooks::on_acknowledged`]). A run
//! started on a directory that holds a log recovers from it first (see [`super::durable`]).
//!
//! An aborted attempt retries on the same worker after a randomized exponential backoff.
//! Latency counts from a transaction's first attempt (in reorder mode: from when it entered
//! its batch) to its commit (with a log: to its acknowledgment). A user abort (TPC-C's
//! rolled-back NewOrder) is counted and not retried. Commits per procedure come from the
//! harness's `Recorder`; aborts per procedure are counted here. Transactions never cross
//! batch boundaries: each is assigned within its own batch, and a share moves between threads
//! only whole. The main thread only sleeps and reports progress, so exactly `threads` threads
//! are busy (plus the epoch clock's sleeper, or with a log the logger and checkpoint threads).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam::queue::SegQueue;
use crossbeam::utils::CachePadded;
use ordo_batching::{BatchSize, ControllerConfig, Knob, Tuner, WindowObservation};
use ordo_harness::{AbortCause, BatchSizeSample, Recorder, RunClock, Window};
use ordo_history::HistoryEntry;
use ordo_log::{Dir, Durability, FileDir, Logger, WorkerLog};
use ordo_storage::{Direction, TableId};
use ordo_workload::{
    Aborted, ConsistencyError, ConsistencyReport, Maintained, Outcome, Scratch, TableWorkload, Tx, Txn, TxnPool,
    WorkloadRng, rng_from_seed,
};
use parking_lot::Mutex;

use super::database::{Database, Index, LoadError};
use super::durable::{
    self, CHECKPOINT_ROWS_PER_STEP, CheckpointPolicy, CheckpointSource, CheckpointStep, Checkpointer, DurableError,
    OpenOptions, RecoveryReport, SEGMENT_BYTES_MAX,
};
use super::epoch::Epochs;
use super::mvcc::{Isolation, MvccTables, SSN_WORKERS_MAX, VERSIONS_MIN};
use super::protocol::{TableProtocol, WorkerOptions};
use super::serial::SerialTables;
use super::silo::{EPOCH_MS_DEFAULT, SiloTables, TABLE_WORKERS_MAX};
use super::tictoc::TicTocTables;
use super::two_phase::TwoPhaseTables;
use crate::batch_front::{self, Assignment, BatchFront, ShareWorker};
use crate::config::ProtocolKind;

/// Progress between two reports.
const PROGRESS_MS: u64 = 100;
/// Attempts of the read-only consistency check before giving up (the database is quiescent,
/// so the first one commits unless something is wrong).
const CHECK_ATTEMPTS_MAX: usize = 3;
/// Largest reorder batch (its conflict graph takes `n^2` bits).
pub const REORDER_BATCH_MAX: usize = 10_000;
/// `auto` reorder batches start at this many transactions per thread. With sticky assignment
/// on two threads, TPC-C (two warehouses, random binding) ran 136-151K commits/s at 8 per
/// thread against 131-136K at 4 (larger batches leave fewer transactions on the wrong
/// thread), and YCSB at θ = 0.99 ran within 1% of 4 per thread.
pub const REORDER_BATCH_PER_THREAD: usize = 8;
/// The name of the reorder batch in the tuner and in results' `batch_sizes` (`batch`).
pub const KNOB_BATCH: &str = "batch";
/// Bounds of [`ReorderTuning`]'s windows: at least a millisecond, at most a minute.
pub const TUNING_WINDOW_US_MIN: u64 = 1_000;
pub const TUNING_WINDOW_US_MAX: u64 = 60_000_000;
/// With a write-ahead log: committed transactions a worker holds unacknowledged, at most.
/// A full queue makes the worker wait for the log (its memory stays bounded).
pub const UNACKNOWLEDGED_PER_WORKER_MAX: usize = 1 << 16;
/// How long a stopping worker waits for its last commits to become durable.
pub const ACKNOWLEDGE_WAIT_MS_MAX: u64 = 60_000;
/// How often the main thread hands acknowledged history entries to the caller.
const HISTORY_STREAM_MS: u64 = 10;
/// How long the checkpoint thread sleeps when it has nothing to read.
const CHECKPOINT_POLL_MS: u64 = 2;

/// The engine's knobs for table workloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TablesConfig {
    pub protocol: ProtocolKind,
    /// Thread-aware batch assignment before execution (§4.2, §5.6).
    pub reorder: bool,
    /// Transactions per reorder batch: `auto` (tuned while the engine runs, starting at
    /// [`REORDER_BATCH_PER_THREAD`] per thread) or fixed.
    pub batch: BatchSize,
    /// How `auto` reorder batches are tuned.
    pub tuning: ReorderTuning,
    /// How reorder batches are split over the threads.
    pub assignment: Assignment,
    /// Worker threads.
    pub threads: usize,
    pub index: Index,
    /// The epoch period (Silo's epochs, reclamation).
    pub epoch_ms: u64,
    /// Threads that load the database (`None`: as many as workers, at least 2).
    pub load_threads: Option<usize>,
    /// The write-ahead log's directory (`None`: nothing is logged). An engine started on a
    /// directory that holds a log recovers from it instead of loading the workload's rows.
    pub wal: Option<PathBuf>,
    /// When a commit is acknowledged: `Off` (no log), `Async` (when logged) or `Sync` (when
    /// its epoch is durable). With a log the engine's epoch is the log's group-commit epoch,
    /// `epoch_ms` long.
    pub durability: Durability,
    /// When fuzzy checkpoints are taken (with a log).
    pub checkpoint: CheckpointPolicy,
    /// `mvcc_si`, `ssi`: most versions a record keeps.
    pub versions: usize,
    /// Transactions each worker draws before the clock starts and replays
    /// ([`crate::pregenerate`]), for workloads that allow it
    /// ([`TableWorkload::replayable`]; the others draw each one as it is needed, as `None`
    /// does for all).
    pub pregenerate: Option<usize>,
}

impl Default for TablesConfig {
    fn default() -> Self {
        TablesConfig {
            protocol: ProtocolKind::Silo,
            reorder: false,
            batch: BatchSize::Auto,
            tuning: ReorderTuning::default(),
            assignment: Assignment::Sticky,
            threads: 2,
            index: Index::Tree,
            epoch_ms: EPOCH_MS_DEFAULT,
            load_threads: None,
            wal: None,
            durability: Durability::Off,
            checkpoint: CheckpointPolicy::default(),
            versions: super::mvcc::VERSIONS_DEFAULT,
            pregenerate: None,
        }
    }
}

impl TablesConfig {
    /// Threads that actually run (`serial` runs one).
    pub fn effective_threads(&self) -> usize {
        if self.protocol.concurrent() { self.threads } else { 1 }
    }

    /// The reorder batch size: the fixed one, or where `auto` starts.
    pub fn initial_batch(&self) -> usize {
        match self.batch.get() {
            Some(size) => size as usize,
            None => (REORDER_BATCH_PER_THREAD * self.effective_threads()).min(self.batch_size_max()),
        }
    }

    /// The largest batch `auto` may choose: [`ReorderTuning::batch_per_thread_max`] per
    /// thread, at most [`REORDER_BATCH_MAX`].
    pub fn batch_size_max(&self) -> usize {
        self.tuning.batch_per_thread_max.saturating_mul(self.effective_threads()).min(REORDER_BATCH_MAX)
    }

    /// The tuner's knobs: the reorder batch, searched between `threads` and
    /// [`Self::batch_size_max`] (none without reordering).
    pub fn knobs(&self) -> Vec<Knob> {
        if !self.reorder {
            return Vec::new();
        }
        // Bounds within the batching crate's (a validated configuration fits in u32).
        let size = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let controller = ControllerConfig::with_bounds(
            size(self.effective_threads()),
            size(self.initial_batch()),
            size(self.batch_size_max()),
        );
        vec![Knob { name: KNOB_BATCH, setting: self.batch, controller }]
    }

    /// The name results carry: the protocol, or `reorder` / `reorder+<protocol>`.
    pub fn label(&self) -> String {
        match (self.reorder, self.protocol) {
            (false, p) => p.name().to_owned(),
            (true, ProtocolKind::Silo) => "reorder".to_owned(),
            (true, p) => format!("reorder+{p}"),
        }
    }

    /// Checks the ranges before anything runs.
    pub fn validate(&self) -> Result<(), TablesError> {
        let invalid = |reason: String| Err(TablesError::Config(reason));
        if self.threads == 0 || self.threads > TABLE_WORKERS_MAX {
            return invalid(format!("threads must be in 1..={TABLE_WORKERS_MAX}, not {}", self.threads));
        }
        if self.epoch_ms == 0 || self.epoch_ms > 60_000 {
            return invalid(format!("epoch-ms must be in 1..=60000, not {}", self.epoch_ms));
        }
        if let Some(load_threads) = self.load_threads
            && (load_threads == 0 || load_threads > TABLE_WORKERS_MAX)
        {
            return invalid(format!("load threads must be in 1..={TABLE_WORKERS_MAX}, not {load_threads}"));
        }
        match (&self.wal, self.durability) {
            (None, Durability::Async | Durability::Sync) => {
                return invalid(format!(
                    "durability {} needs a write-ahead log directory",
                    durability_name(self.durability)
                ));
            }
            (Some(_), Durability::Off) => {
                return invalid("durability off logs nothing: give async or sync, or no log directory".into());
            }
            _ => {}
        }
        crate::pregenerate::validate(self.pregenerate).map_err(|e| TablesError::Config(e.to_string()))?;
        if self.checkpoint.period_ms == Some(0) {
            return invalid("the checkpoint period must be at least 1 ms".into());
        }
        if self.checkpoint.log_bytes.is_some_and(|bytes| bytes < 1 << 20) {
            return invalid("checkpoints every less than 1 MiB of log would do little else".into());
        }
        if self.reorder {
            if !self.protocol.concurrent() {
                return invalid("reorder runs over a concurrent protocol, not serial".into());
            }
            if let Some(batch) = self.batch.get().map(|size| size as usize) {
                if batch > REORDER_BATCH_MAX {
                    return invalid(format!("batch: {batch} transactions, at most {REORDER_BATCH_MAX}"));
                }
                if batch < self.threads {
                    return invalid(format!("batch: {batch} transactions cannot feed {} threads", self.threads));
                }
            }
        }
        self.tuning.validate()
    }
}

/// How `auto` reorder batches are tuned: the measurement windows and the search's upper bound.
///
/// The windows are the pipeline's (50 ms, held open until 2,000 commits, at most a second).
/// At the rates this engine reaches on two cores (about 100,000 TPC-C and 250,000 YCSB commits
/// per second with reordering) a 50 ms window counts several thousand commits, so counting
/// noise (about 1/sqrt(commits), under 2%) stays below the controller's 3% tolerance, and a
/// round (three windows on each of its three sizes) takes about 450 ms, or 150 ms when one
/// window of each already decides it: some twenty rounds or more in a ten-second run.
///
/// The upper bound, 32 transactions per thread, is where measured throughput stops growing
/// on two threads: from 4 per thread up, YCSB at θ = 0.99 (10M records) and TPC-C (two
/// warehouses) change by less than the run-to-run spread, and 64 or 128 per thread gained
/// nothing beyond it over 32. Latency, though, grows with the batch (a transaction waits behind its
/// share: TPC-C's p99 0.2 ms at 2 per thread, 1.2 ms at 32, 5 ms at 128), so the bound caps
/// what a search that sees only goodput can cost on such a plateau.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReorderTuning {
    /// Shortest measurement window.
    pub window_us: u64,
    /// A window goes on past `window_us` until it holds this many commits, up to
    /// `window_us_max`.
    pub window_commits_min: u64,
    /// Longest measurement window.
    pub window_us_max: u64,
    /// `auto` batches hold at most this many transactions per thread.
    pub batch_per_thread_max: usize,
    /// Most entries of the recorded size history.
    pub history_len_max: usize,
}

impl Default for ReorderTuning {
    fn default() -> Self {
        ReorderTuning {
            window_us: 50_000,
            window_commits_min: 2_000,
            window_us_max: 1_000_000,
            batch_per_thread_max: 32,
            history_len_max: 256,
        }
    }
}

impl ReorderTuning {
    /// Checks every field against its bound.
    ///
    /// # Errors
    /// [`TablesError::Config`] naming the first field out of bounds.
    pub fn validate(&self) -> Result<(), TablesError> {
        let invalid = |reason: String| Err(TablesError::Config(format!("reorder tuning: {reason}")));
        let windows = TUNING_WINDOW_US_MIN..=TUNING_WINDOW_US_MAX;
        for (field, window_us) in [("window_us", self.window_us), ("window_us_max", self.window_us_max)] {
            if !windows.contains(&window_us) {
                return invalid(format!(
                    "{field} {window_us} is outside {TUNING_WINDOW_US_MIN}..={TUNING_WINDOW_US_MAX}"
                ));
            }
        }
        if self.window_us_max < self.window_us {
            return invalid(format!(
                "window_us_max {} is shorter than window_us {}",
                self.window_us_max, self.window_us
            ));
        }
        if self.window_commits_min == 0 {
            return invalid("window_commits_min must be at least 1".into());
        }
        if !(REORDER_BATCH_PER_THREAD..=REORDER_BATCH_MAX).contains(&self.batch_per_thread_max) {
            return invalid(format!(
                "batch_per_thread_max {} is outside {REORDER_BATCH_PER_THREAD}..={REORDER_BATCH_MAX}",
                self.batch_per_thread_max
            ));
        }
        if !(2..=ordo_batching::HISTORY_LEN_MAX).contains(&self.history_len_max) {
            return invalid(format!(
                "history_len_max {} is outside 2..={}",
                self.history_len_max,
                ordo_batching::HISTORY_LEN_MAX
            ));
        }
        Ok(())
    }
}

/// The name of a durability setting, as the command line and results spell it.
pub fn durability_name(durability: Durability) -> &'static str {
    match durability {
        Durability::Off => "off",
        Durability::Async => "async",
        Durability::Sync => "sync",
    }
}

/// How long and how a run goes.
#[derive(Debug, Clone)]
pub struct TableRunSpec {
    pub seed: u64,
    pub warmup: Duration,
    pub duration: Duration,
    pub cooldown: Duration,
    /// Keep every committed transaction in the history format with tables.
    pub record_history: bool,
}

/// What a run measured.
#[derive(Debug)]
pub struct TableRunReport {
    pub recorder: Recorder,
    /// Aborted attempts per procedure, in the measurement window.
    pub aborts_by_procedure: Vec<u64>,
    pub measured_s: f64,
    pub history: Vec<HistoryEntry>,
    pub load_s: f64,
    pub threads: usize,
    pub index: Index,
    /// The workload's consistency conditions after the run.
    pub consistency: Result<ConsistencyReport, ConsistencyError>,
    /// With a write-ahead log: what it recovered and wrote.
    pub durability: Option<DurabilityReport>,
    /// With `auto` reorder batches: the sizes chosen over time (`batch`), one entry at the
    /// first window and one per round of the controller; empty when the batch was fixed.
    pub batch_sizes: Vec<BatchSizeSample>,
}

/// What the write-ahead log did in a run.
#[derive(Debug, Clone, PartialEq)]
pub struct DurabilityReport {
    /// What starting on the directory recovered (`None`: it was new).
    pub recovery: Option<RecoveryReport>,
    /// Every commit of an epoch up to this one is durable.
    pub durable_epoch: u64,
    /// Bytes the logger wrote to segments.
    pub log_bytes: u64,
    /// Fuzzy checkpoints committed during the run.
    pub checkpoints: u64,
}

/// Why a run could not start, or stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TablesError {
    #[error("invalid engine configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Durable(#[from] DurableError),
    /// The log stopped (a failed write or fsync, a full disk) or a checkpoint failed: the
    /// engine stopped acknowledging commits at once and never retried.
    #[error("the write-ahead log stopped; commits after its last durable epoch were not acknowledged: {0}")]
    LogStopped(String),
    /// Acknowledged transactions could not be handed to the history sink.
    #[error("writing the history: {0}")]
    History(String),
}

/// Receives acknowledged history entries, a batch every few milliseconds; an error stops the
/// run.
pub type HistorySink<'a> = dyn FnMut(&[HistoryEntry]) -> Result<(), String> + 'a;

/// Optional ways into a run.
#[derive(Default)]
pub struct RunHooks<'a> {
    /// The log directory to use instead of opening `TablesConfig::wal` on the file system
    /// (tests pass a fault-injecting one; `wal` still names it in messages).
    pub dir: Option<Arc<dyn Dir>>,
    /// Receives every committed transaction's history entry as it is acknowledged, from the
    /// main thread every few milliseconds, instead of collecting them in the report (with
    /// `record_history`). An error stops the run.
    pub on_acknowledged: Option<&'a mut HistorySink<'a>>,
}

impl std::fmt::Debug for RunHooks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHooks")
            .field("dir", &self.dir)
            .field("on_acknowledged", &self.on_acknowledged.is_some())
            .finish()
    }
}

/// Runs `workload` on the protocol `config` names; `progress(elapsed_s, commits)` is called
/// every `PROGRESS_MS`.
pub fn run(
    config: &TablesConfig,
    workload: &Arc<dyn TableWorkload>,
    spec: &TableRunSpec,
    progress: impl FnMut(f64, u64),
) -> Result<TableRunReport, TablesError> {
    run_with(config, workload, spec, progress, RunHooks::default())
}

/// [`run`], with a log directory of the caller's or a sink for acknowledged transactions.
pub fn run_with(
    config: &TablesConfig,
    workload: &Arc<dyn TableWorkload>,
    spec: &TableRunSpec,
    progress: impl FnMut(f64, u64),
    hooks: RunHooks<'_>,
) -> Result<TableRunReport, TablesError> {
    config.validate()?;
    let loading = Instant::now();
    let threads = config.effective_threads();
    let load_threads = config.load_threads.unwrap_or(threads.max(2));
    let run = Run { loading, config, workload: workload.as_ref(), spec, progress, hooks, load_threads };
    match config.protocol {
        ProtocolKind::Silo => run.start(|db| SiloTables::over(db, ProtocolKind::Silo)),
        ProtocolKind::TicToc => run.start(|db| TicTocTables::over(db, ProtocolKind::TicToc)),
        kind @ (ProtocolKind::NoWait | ProtocolKind::WaitDie) => run.start(|db| TwoPhaseTables::over(db, kind)),
        ProtocolKind::Serial => run.start(|db| SerialTables::over(db, ProtocolKind::Serial)),
        ProtocolKind::MvccSi | ProtocolKind::Ssi => {
            let isolation =
                if config.protocol == ProtocolKind::Ssi { Isolation::SerialSafetyNet } else { Isolation::Snapshot };
            if isolation == Isolation::SerialSafetyNet && threads > SSN_WORKERS_MAX {
                return Err(TablesError::Config(format!("ssi runs at most {SSN_WORKERS_MAX} threads, not {threads}")));
            }
            if config.versions < VERSIONS_MIN {
                return Err(TablesError::Config(format!(
                    "versions must be at least {VERSIONS_MIN}, not {}",
                    config.versions
                )));
            }
            run.start(|db| MvccTables::over_with(db, isolation, config.versions))
        }
    }
}

/// A run's arguments, independent of the protocol.
struct Run<'a, 'h, F> {
    loading: Instant,
    config: &'a TablesConfig,
    workload: &'a dyn TableWorkload,
    spec: &'a TableRunSpec,
    progress: F,
    hooks: RunHooks<'h>,
    load_threads: usize,
}

/// The log of a run: the logger, each worker's handle, and the directory.
struct Wal {
    logger: Logger,
    logs: Vec<WorkerLog>,
    dir: Arc<dyn Dir>,
    recovery: Option<RecoveryReport>,
}

impl<F: FnMut(f64, u64)> Run<'_, '_, F> {
    /// Loads the database (from the workload, or by recovering the log directory), puts the
    /// protocol `over` it, and runs.
    fn start<P: TableProtocol>(mut self, over: impl FnOnce(Database) -> P) -> Result<TableRunReport, TablesError> {
        let config = self.config;
        let Some(path) = &config.wal else {
            let epochs = Epochs::clock(config.epoch_ms);
            let database = Database::load_with(self.workload, config.index, self.load_threads, P::LAYOUT, epochs)?;
            return self.drive(&over(database), None);
        };
        let dir: Arc<dyn Dir> = match self.hooks.dir.take() {
            Some(dir) => dir,
            None => Arc::new(FileDir::open(path).map_err(|error| DurableError::Directory {
                dir: path.display().to_string(),
                reason: error.to_string(),
            })?),
        };
        let options = OpenOptions {
            durability: config.durability,
            epoch_ms: config.epoch_ms,
            workers: config.effective_threads(),
            index: config.index,
            load_threads: self.load_threads,
            layout: P::LAYOUT,
            recovered_meta: P::recovered_meta,
            manual_logger: false,
            segment_bytes_max: SEGMENT_BYTES_MAX,
        };
        let opened = durable::open(dir, path, self.workload, &options)?;
        let wal = Wal { logger: opened.logger, logs: opened.logs, dir: opened.dir, recovery: opened.recovery };
        self.drive(&over(opened.database), Some(wal))
    }

    fn drive<P: TableProtocol>(mut self, protocol: &P, wal: Option<Wal>) -> Result<TableRunReport, TablesError> {
        let load_s = self.loading.elapsed().as_secs_f64();
        let threads = self.config.effective_threads();
        let micros = |d: Duration| d.as_micros() as u64;
        let streaming = self.hooks.on_acknowledged.is_some() && self.spec.record_history;
        let mut tuner = BatchTuner::new(self.config)?;
        let batch_size = tuner.as_ref().map_or_else(|| self.config.initial_batch(), BatchTuner::size);
        let workload = self.workload;
        let pregenerate = self.config.pregenerate.filter(|_| workload.replayable());
        let generate = |rng: &mut WorkloadRng, worker: usize, txn: &mut Txn| workload.generate(rng, worker, txn);
        let mut pools = crate::pregenerate::draw(pregenerate, threads, self.spec.seed, &generate);
        let shared = Shared {
            protocol,
            workload: self.workload,
            spec: self.spec,
            clock: RunClock::start(),
            window: Window::after_warmup(micros(self.spec.warmup), micros(self.spec.duration)),
            stop: AtomicBool::new(false),
            counts: (0..threads).map(|_| CachePadded::new(WorkerCounts::default())).collect(),
            threads,
            batch: self.config.reorder.then(|| BatchFront::new(threads, batch_size, self.config.assignment)),
            logged: wal.is_some(),
            acknowledged: if streaming {
                (0..threads).map(|_| CachePadded::new(SegQueue::new())).collect()
            } else {
                Vec::new()
            },
            failure: Mutex::new(None),
        };
        let (mut logs, logger, dir, recovery) = match wal {
            Some(Wal { logger, logs, dir, recovery }) => {
                (logs.into_iter().map(Some).collect(), Some(logger), Some(dir), recovery)
            }
            None => ((0..threads).map(|_| None).collect::<Vec<_>>(), None, None, None),
        };
        let checkpoint_stop = AtomicBool::new(false);
        let total = self.spec.warmup + self.spec.duration + self.spec.cooldown;
        let mut on_acknowledged = self.hooks.on_acknowledged.take();
        let mut batch = Vec::new();
        let (results, checkpoints): (Vec<WorkerResult>, u64) = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|index| {
                    let shared = &shared;
                    let (log, pool) = (logs[index].take(), pools[index].take());
                    std::thread::Builder::new()
                        .name(format!("tables-worker-{index}"))
                        .spawn_scoped(scope, move || worker(shared, index, log, pool))
                        .expect("spawning a worker")
                })
                .collect();
            let checkpointer = match (&logger, &dir) {
                (Some(logger), Some(dir)) => {
                    let (shared, checkpoint_stop, policy) = (&shared, &checkpoint_stop, self.config.checkpoint);
                    Some(
                        std::thread::Builder::new()
                            .name("tables-checkpoint".into())
                            .spawn_scoped(scope, move || {
                                checkpoint_thread(
                                    shared,
                                    protocol.checkpoint_source(),
                                    logger,
                                    &**dir,
                                    policy,
                                    checkpoint_stop,
                                )
                            })
                            .expect("spawning the checkpoint thread"),
                    )
                }
                _ => None,
            };
            let mut last_progress = Duration::ZERO;
            let tick = Duration::from_millis(if streaming { HISTORY_STREAM_MS } else { PROGRESS_MS });
            if let Some(tuner) = &mut tuner {
                tuner.observe(shared.clock.now_us(), shared.attempts());
            }
            while let Some(left) = total.checked_sub(shared.clock.elapsed()).filter(|left| !left.is_zero()) {
                if shared.failure.lock().is_some() {
                    break;
                }
                let window_left = tuner.as_ref().map_or(tick, |tuner| {
                    Duration::from_micros(tuner.next_window_us().saturating_sub(shared.clock.now_us()))
                });
                std::thread::sleep(left.min(tick).min(window_left));
                if let Some(sink) = on_acknowledged.as_deref_mut() {
                    shared.stream_acknowledged(sink, &mut batch);
                }
                if let (Some(tuner), Some(front)) = (&mut tuner, &shared.batch) {
                    let now = shared.clock.now_us();
                    if now >= tuner.next_window_us()
                        && let Some(size) = tuner.observe(now, shared.attempts())
                    {
                        front.set_batch_size(size);
                    }
                }
                let elapsed = shared.clock.elapsed();
                if elapsed.saturating_sub(last_progress) >= Duration::from_millis(PROGRESS_MS) {
                    last_progress = elapsed;
                    let commits = shared.counts.iter().map(|c| c.acknowledged.load(Ordering::Relaxed)).sum();
                    (self.progress)(elapsed.as_secs_f64(), commits);
                }
            }
            shared.stop.store(true, Ordering::Relaxed);
            let results = handles.into_iter().map(|h| h.join().expect("a worker panicked")).collect();
            checkpoint_stop.store(true, Ordering::Relaxed);
            let checkpoints = checkpointer.map_or(0, |h| h.join().expect("the checkpoint thread panicked"));
            (results, checkpoints)
        });
        if let Some(sink) = on_acknowledged {
            shared.stream_acknowledged(sink, &mut batch);
        }
        let durability = match logger {
            None => None,
            Some(logger) => {
                let log_bytes = logger.bytes_written();
                match logger.shutdown() {
                    Ok(durable_epoch) => Some(DurabilityReport { recovery, durable_epoch, log_bytes, checkpoints }),
                    Err(error) => {
                        shared.fail(TablesError::LogStopped(error.to_string()));
                        None
                    }
                }
            }
        };
        if let Some(failure) = shared.failure.lock().take() {
            return Err(failure);
        }
        let mut recorder = Recorder::new(shared.window);
        let mut history = Vec::new();
        let mut aborts_by_procedure = Vec::new();
        for result in results {
            recorder.merge(&result.recorder);
            history.extend(result.history);
            add_counts(&mut aborts_by_procedure, &result.aborts_by_procedure);
        }
        history.sort_unstable_by_key(|entry| entry.id);
        let consistency = check(protocol, self.workload);
        Ok(TableRunReport {
            recorder,
            aborts_by_procedure,
            measured_s: self.spec.duration.as_secs_f64(),
            history,
            load_s,
            threads,
            index: self.config.index,
            consistency,
            durability,
            batch_sizes: tuner.map(|tuner| tuner.samples()).unwrap_or_default(),
        })
    }
}

/// The checkpoint thread: steps a [`Checkpointer`] until told to stop; returns how many
/// checkpoints it committed. A failure stops the run.
fn checkpoint_thread<P: TableProtocol>(
    shared: &Shared<'_, P>,
    source: &dyn CheckpointSource,
    logger: &Logger,
    dir: &dyn Dir,
    policy: CheckpointPolicy,
    stop: &AtomicBool,
) -> u64 {
    let started = Instant::now();
    let mut checkpointer = Checkpointer::new(dir, policy, 0, logger.bytes_written());
    while !stop.load(Ordering::Relaxed) {
        let now_ms = started.elapsed().as_millis() as u64;
        match checkpointer.step(source, logger, now_ms, CHECKPOINT_ROWS_PER_STEP) {
            Ok(CheckpointStep::Scanned) => {}
            Ok(CheckpointStep::Idle | CheckpointStep::Waiting | CheckpointStep::Committed { .. }) => {
                std::thread::sleep(Duration::from_millis(CHECKPOINT_POLL_MS));
            }
            Err(error) => {
                shared.fail(TablesError::LogStopped(format!("checkpoint: {error}")));
                break;
            }
        }
    }
    checkpointer.committed
}

/// Runs the workload's consistency check through a read-only attempt on a quiescent
/// database (recording no history).
pub fn check<P: TableProtocol>(
    protocol: &P,
    workload: &dyn TableWorkload,
) -> Result<ConsistencyReport, ConsistencyError> {
    let mut worker = protocol.worker(WorkerOptions { index: 0, workers: 1, record_history: false });
    let mut row = Vec::new();
    let mut last = None;
    for attempt in 0..CHECK_ATTEMPTS_MAX {
        let mut tx = protocol.begin(&mut worker, attempt > 0);
        let report = workload.check(&mut Maintained::new(workload.schema(), &mut tx, &mut row));
        match P::commit(tx) {
            Ok(_) => return report,
            Err(_) => last = Some(report),
        }
    }
    Err(ConsistencyError {
        condition: "readable".into(),
        detail: format!("the read-only check failed validation {CHECK_ATTEMPTS_MAX} times; last result {last:?}"),
    })
}

fn add_counts(total: &mut Vec<u64>, part: &[u64]) {
    if total.len() < part.len() {
        total.resize(part.len(), 0);
    }
    for (mine, theirs) in total.iter_mut().zip(part) {
        *mine += theirs;
    }
}

/// Everything the workers share.
struct Shared<'a, P> {
    protocol: &'a P,
    workload: &'a dyn TableWorkload,
    spec: &'a TableRunSpec,
    /// The run's clock, started when the workers are.
    clock: RunClock,
    window: Window,
    stop: AtomicBool,
    /// Per worker: what it counted, for progress and the batch tuner.
    counts: Vec<CachePadded<WorkerCounts>>,
    threads: usize,
    batch: Option<BatchFront>,
    /// Whether commits are logged (and acknowledged by the log).
    logged: bool,
    /// Per worker, when acknowledged history entries are streamed: those not yet handed on.
    acknowledged: Vec<CachePadded<SegQueue<HistoryEntry>>>,
    /// The first error that stops the run (the log stopped, a checkpoint or the history sink
    /// failed).
    failure: Mutex<Option<TablesError>>,
}

/// What one worker has counted since the run started, published for the main thread. Only
/// the worker stores (its own running totals, relaxed): no read-modify-write on the
/// transaction path, and one cache line per worker.
#[derive(Debug, Default)]
struct WorkerCounts {
    /// Commits acknowledged (with a log: once durable); progress reports these.
    acknowledged: AtomicU64,
    /// Attempts that committed (with a log: before the log acknowledges them).
    committed: AtomicU64,
    /// Attempts that aborted (concurrency control; user aborts are not counted).
    aborted: AtomicU64,
}

/// Committed and aborted attempts of every worker together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Attempts {
    committed: u64,
    aborted: u64,
}

impl<P> Shared<'_, P> {
    /// The workers' committed and aborted attempts so far.
    fn attempts(&self) -> Attempts {
        self.counts.iter().fold(Attempts::default(), |sum, counts| Attempts {
            committed: sum.committed + counts.committed.load(Ordering::Relaxed),
            aborted: sum.aborted + counts.aborted.load(Ordering::Relaxed),
        })
    }

    /// Stops the run with `error` (the first one reported wins).
    fn fail(&self, error: TablesError) {
        self.failure.lock().get_or_insert(error);
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Hands every acknowledged entry waiting in the workers' queues to `sink`, as one batch.
    fn stream_acknowledged(&self, sink: &mut HistorySink<'_>, batch: &mut Vec<HistoryEntry>) {
        batch.clear();
        for queue in &self.acknowledged {
            while let Some(entry) = queue.pop() {
                batch.push(entry);
            }
        }
        if !batch.is_empty()
            && let Err(error) = sink(batch)
        {
            self.fail(TablesError::History(error));
        }
    }
}

struct WorkerResult {
    recorder: Recorder,
    aborts_by_procedure: Vec<u64>,
    history: Vec<HistoryEntry>,
}

/// How one transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    Committed,
    UserAborted,
    /// The caller gave up while the transaction was retrying.
    Stopped,
}

/// Runs `txn` on `worker` until it commits, its procedure refuses, or `on_abort(restarts,
/// cause)` (called after every aborted attempt) returns `false`. With a log attached to the
/// worker's trace, a committed transaction's redo record is appended before this returns.
pub fn run_transaction<P: TableProtocol>(
    protocol: &P,
    worker: &mut P::Worker,
    workload: &dyn TableWorkload,
    txn: &Txn,
    scratch: &mut Scratch,
    row: &mut Vec<u64>,
    on_abort: impl FnMut(u32, AbortCause) -> bool,
) -> (Finished, u32) {
    run_transaction_counted(protocol, worker, workload, txn, scratch, row, &mut RowCounts::default(), on_abort)
}

/// Rows a committed attempt read: by point reads (present keys) and returned by scans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowCounts {
    pub point_reads: u64,
    pub scan_rows: u64,
}

/// [`run_transaction`], also counting into `rows` the rows its committed attempt read.
#[allow(clippy::too_many_arguments)]
pub fn run_transaction_counted<P: TableProtocol>(
    protocol: &P,
    worker: &mut P::Worker,
    workload: &dyn TableWorkload,
    txn: &Txn,
    scratch: &mut Scratch,
    row: &mut Vec<u64>,
    rows: &mut RowCounts,
    on_abort: impl FnMut(u32, AbortCause) -> bool,
) -> (Finished, u32) {
    let (finished, restarts, _) = run_attempts(protocol, worker, workload, txn, scratch, row, rows, on_abort);
    (finished, restarts)
}

/// [`run_transaction_counted`], also returning a committed transaction's epoch.
#[allow(clippy::too_many_arguments)]
fn run_attempts<P: TableProtocol>(
    protocol: &P,
    worker: &mut P::Worker,
    workload: &dyn TableWorkload,
    txn: &Txn,
    scratch: &mut Scratch,
    row: &mut Vec<u64>,
    rows: &mut RowCounts,
    mut on_abort: impl FnMut(u32, AbortCause) -> bool,
) -> (Finished, u32, u64) {
    let mut restarts = 0u32;
    loop {
        P::trace(worker).enter_epoch();
        let mut tx = protocol.begin(worker, restarts > 0);
        let mut counted =
            Counted { inner: Maintained::new(workload.schema(), &mut tx, row), rows: RowCounts::default() };
        let outcome = workload.run(txn, &mut counted, scratch);
        let attempt_rows = counted.rows;
        let committed = match outcome {
            Ok(Outcome::Commit) => P::commit(tx),
            Ok(Outcome::UserAbort) => {
                P::abort(tx);
                return (Finished::UserAborted, restarts, 0);
            }
            Err(Aborted) => Err(P::abort(tx)),
        };
        match committed {
            Ok(committed) => {
                rows.point_reads += attempt_rows.point_reads;
                rows.scan_rows += attempt_rows.scan_rows;
                P::trace(worker).log_commit(committed.epoch);
                return (Finished::Committed, restarts, committed.epoch);
            }
            Err(cause) => {
                restarts += 1;
                if !on_abort(restarts, cause) {
                    return (Finished::Stopped, restarts, 0);
                }
            }
        }
    }
}

/// A [`Tx`] that counts the rows the workload was given.
struct Counted<T> {
    inner: T,
    rows: RowCounts,
}

impl<T: Tx> Tx for Counted<T> {
    #[inline]
    fn prefetch(&mut self, table: TableId, keys: &[u64]) {
        self.inner.prefetch(table, keys);
    }

    #[inline]
    fn get(&mut self, table: TableId, key: u64, row: &mut [u64], for_update: bool) -> Result<bool, Aborted> {
        let present = self.inner.get(table, key, row, for_update)?;
        self.rows.point_reads += u64::from(present);
        Ok(present)
    }

    #[inline]
    fn put(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        self.inner.put(table, key, row)
    }

    #[inline]
    fn insert(&mut self, table: TableId, key: u64, row: &[u64]) -> Result<bool, Aborted> {
        self.inner.insert(table, key, row)
    }

    #[inline]
    fn delete(&mut self, table: TableId, key: u64) -> Result<bool, Aborted> {
        self.inner.delete(table, key)
    }

    #[inline]
    fn scan(
        &mut self,
        table: TableId,
        low: u64,
        high: u64,
        direction: Direction,
        limit: usize,
        visit: &mut dyn FnMut(u64, &[u64]) -> bool,
    ) -> Result<usize, Aborted> {
        let returned = self.inner.scan(table, low, high, direction, limit, visit)?;
        self.rows.scan_rows += returned as u64;
        Ok(returned)
    }

    fn wants_update_hints(&self) -> bool {
        self.inner.wants_update_hints()
    }
}

/// A committed transaction waiting for its epoch to become durable.
#[derive(Debug)]
struct Unacknowledged {
    epoch: u64,
    /// When its first attempt started, in microseconds into the run (latency counts from here
    /// to the acknowledgment).
    started_us: u64,
    restarts: u32,
    procedure: u8,
    /// Rows its committed attempt read (point reads, rows returned by scans).
    rows: RowCounts,
    /// Boxed: the queue holds tens of thousands of these, most without an entry.
    entry: Option<Box<HistoryEntry>>,
}

/// One worker's state.
struct WorkerState<'a, P: TableProtocol> {
    index: usize,
    protocol_worker: P::Worker,
    rng: WorkloadRng,
    backoff_rng: WorkloadRng,
    recorder: Recorder,
    aborts_by_procedure: Vec<u64>,
    scratch: Scratch,
    row: Vec<u64>,
    /// Commits acknowledged (published as [`WorkerCounts::acknowledged`]).
    committed: u64,
    /// Attempts committed and aborted (published as [`WorkerCounts::committed`] and
    /// [`WorkerCounts::aborted`]).
    attempts: Attempts,
    /// With a log: committed transactions not acknowledged yet, oldest first.
    unacknowledged: VecDeque<Unacknowledged>,
    /// With a log and histories collected in the report: acknowledged entries.
    acknowledged_history: Vec<HistoryEntry>,
    /// Transactions drawn before the run, replayed instead of drawing (`None`: draw each).
    pool: Option<TxnPool>,
    shared: &'a Shared<'a, P>,
}

impl<P: TableProtocol> WorkerState<'_, P> {
    /// The next transaction, for worker `worker`, into `txn`: the pool's next (a pool exists
    /// only for workloads whose transactions any worker may run), or a fresh draw.
    #[inline]
    fn next_txn(&mut self, worker: usize, txn: &mut Txn) {
        match &mut self.pool {
            Some(pool) => pool.next_into(txn),
            None => self.shared.workload.generate(&mut self.rng, worker, txn),
        }
    }

    /// Runs `txn`, which first started `first_start_us` into the run, until it commits or its
    /// procedure refuses (or the run is stopping), and returns when it ended, in microseconds
    /// into the run.
    fn run_transaction(&mut self, txn: &Txn, first_start_us: u64) -> u64 {
        let shared = self.shared;
        let procedure = usize::from(txn.procedure);
        let counts = &shared.counts[self.index];
        let (recorder, aborts_by_procedure, backoff_rng, attempts) =
            (&mut self.recorder, &mut self.aborts_by_procedure, &mut self.backoff_rng, &mut self.attempts);
        let mut rows = RowCounts::default();
        let (finished, restarts, epoch) = run_attempts(
            shared.protocol,
            &mut self.protocol_worker,
            shared.workload,
            txn,
            &mut self.scratch,
            &mut self.row,
            &mut rows,
            |restarts, cause| {
                let now = shared.clock.now_us();
                recorder.abort(now, cause);
                attempts.aborted += 1;
                counts.aborted.store(attempts.aborted, Ordering::Relaxed);
                if shared.window.contains(now) {
                    if aborts_by_procedure.len() <= procedure {
                        aborts_by_procedure.resize(procedure + 1, 0);
                    }
                    aborts_by_procedure[procedure] += 1;
                }
                if shared.stop.load(Ordering::Relaxed) {
                    return false;
                }
                crate::protocol::back_off(restarts, backoff_rng);
                true
            },
        );
        if finished == Finished::Committed {
            self.attempts.committed += 1;
            counts.committed.store(self.attempts.committed, Ordering::Relaxed);
        }
        match finished {
            Finished::Committed if shared.logged => {
                let entry = if shared.spec.record_history {
                    P::history(&mut self.protocol_worker).pop().map(Box::new)
                } else {
                    None
                };
                self.unacknowledged.push_back(Unacknowledged {
                    epoch,
                    started_us: first_start_us,
                    restarts,
                    procedure: txn.procedure,
                    rows,
                    entry,
                });
                self.acknowledge();
                if self.unacknowledged.len() >= UNACKNOWLEDGED_PER_WORKER_MAX {
                    self.wait_for_acknowledgments(UNACKNOWLEDGED_PER_WORKER_MAX / 2);
                }
                shared.clock.now_us()
            }
            Finished::Committed => {
                // One clock read serves the window and the latency.
                let now = shared.clock.now_us();
                self.recorder.commit(now, now.saturating_sub(first_start_us), restarts, txn.procedure);
                self.recorder.rows(now, rows.point_reads, rows.scan_rows);
                self.committed += 1;
                counts.acknowledged.store(self.committed, Ordering::Relaxed);
                now
            }
            Finished::UserAborted => {
                let now = shared.clock.now_us();
                self.recorder.user_abort(now);
                now
            }
            Finished::Stopped => shared.clock.now_us(),
        }
    }

    /// Acknowledges every waiting commit whose epoch the log allows: counts it committed, ends
    /// its latency and releases its history entry. After the log stopped, acknowledges
    /// nothing and stops the run.
    fn acknowledge(&mut self) {
        let shared = self.shared;
        let Some(log) = P::trace(&mut self.protocol_worker).log() else { return };
        if log.has_failed() {
            let reason = log.check().err().map_or_else(|| "the logger stopped".to_owned(), |error| error.to_string());
            shared.fail(TablesError::LogStopped(reason));
            return;
        }
        let limit = match log.durability() {
            Durability::Sync => log.durable_epoch(),
            Durability::Off | Durability::Async => u64::MAX,
        };
        if self.unacknowledged.front().is_none_or(|front| front.epoch > limit) {
            // The common case under `sync`: the oldest commit's epoch is not durable yet (no
            // clock read for it).
            return;
        }
        let mut acknowledged = 0;
        let now_us = shared.clock.now_us();
        while let Some(front) = self.unacknowledged.front()
            && front.epoch <= limit
        {
            let done = self.unacknowledged.pop_front().expect("front exists");
            let latency_us = now_us.saturating_sub(done.started_us);
            self.recorder.commit(now_us, latency_us, done.restarts, done.procedure);
            self.recorder.rows(now_us, done.rows.point_reads, done.rows.scan_rows);
            if let Some(entry) = done.entry.map(|entry| *entry) {
                match shared.acknowledged.get(self.index) {
                    Some(queue) => queue.push(entry),
                    None => self.acknowledged_history.push(entry),
                }
            }
            acknowledged += 1;
        }
        if acknowledged > 0 {
            self.committed += acknowledged;
            shared.counts[self.index].acknowledged.store(self.committed, Ordering::Relaxed);
        }
    }

    /// Waits, idle in the log (holding no epoch open), until at most `left` commits are
    /// unacknowledged, the log stops, or [`ACKNOWLEDGE_WAIT_MS_MAX`] passes.
    fn wait_for_acknowledgments(&mut self, left: usize) {
        let Some(log) = P::trace(&mut self.protocol_worker).log() else { return };
        log.idle();
        let started = Instant::now();
        loop {
            self.acknowledge();
            if self.unacknowledged.len() <= left || self.shared.failure.lock().is_some() {
                return;
            }
            if started.elapsed() > Duration::from_millis(ACKNOWLEDGE_WAIT_MS_MAX) {
                let epoch = self.unacknowledged.front().map_or(0, |u| u.epoch);
                self.shared.fail(TablesError::LogStopped(format!(
                    "epoch {epoch} did not become durable within {ACKNOWLEDGE_WAIT_MS_MAX} ms"
                )));
                return;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

fn worker<P: TableProtocol>(
    shared: &Shared<'_, P>,
    index: usize,
    log: Option<WorkerLog>,
    pool: Option<TxnPool>,
) -> WorkerResult {
    let seed = shared.spec.seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let options = WorkerOptions { index, workers: shared.threads, record_history: shared.spec.record_history };
    let mut protocol_worker = shared.protocol.worker(options);
    // With a log, the queue of unacknowledged commits is allocated at its bound once (pages
    // are touched only as it fills): doubling it while the run warms up copies it each time.
    let unacknowledged_capacity = if log.is_some() { UNACKNOWLEDGED_PER_WORKER_MAX } else { 0 };
    if let Some(log) = log {
        P::trace(&mut protocol_worker).log_to(log);
    }
    let mut state = WorkerState {
        index,
        protocol_worker,
        rng: rng_from_seed(seed),
        backoff_rng: rng_from_seed(seed.rotate_left(17)),
        recorder: Recorder::new(shared.window),
        aborts_by_procedure: vec![0; shared.workload.procedure_names().len()],
        scratch: Scratch::default(),
        row: Vec::new(),
        committed: 0,
        attempts: Attempts::default(),
        unacknowledged: VecDeque::with_capacity(unacknowledged_capacity),
        acknowledged_history: Vec::new(),
        pool,
        shared,
    };
    batch_front::work(&mut state, shared.batch.as_ref());
    // The last commits are acknowledged once durable (unless the log stopped).
    state.wait_for_acknowledgments(0);
    shared.protocol.quiesce(&mut state.protocol_worker);
    let history = if shared.logged {
        std::mem::take(&mut state.acknowledged_history)
    } else {
        std::mem::take(P::history(&mut state.protocol_worker))
    };
    WorkerResult { recorder: state.recorder, aborts_by_procedure: state.aborts_by_procedure, history }
}

impl<P: TableProtocol> ShareWorker for WorkerState<'_, P> {
    fn index(&self) -> usize {
        self.index
    }

    fn stopping(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    fn generate(&mut self, slot: usize, txn: &mut Txn) {
        // Workloads that bind transactions to workers (TPC-C's home warehouses) draw a batch
        // as the threads together would (and are not replayed from a pool).
        self.next_txn(slot % self.shared.threads, txn);
    }

    fn footprint(&self, txn: &Txn, reads: &mut Vec<u64>, writes: &mut Vec<u64>) {
        self.shared.workload.footprint(txn, reads, writes);
    }

    fn now_us(&self) -> u64 {
        self.shared.clock.now_us()
    }

    fn run(&mut self, txn: &Txn, entered_us: u64, _next: Option<&Txn>) -> u64 {
        self.run_transaction(txn, entered_us)
    }

    fn built(&mut self, size: usize, took: Duration) {
        let now = self.shared.clock.now_us();
        self.recorder.batch(now, size, 0, took.as_nanos() as u64);
    }

    fn take_pool(&mut self) -> Option<TxnPool> {
        self.pool.take()
    }
}

/// The main thread's side of `auto` reorder batches: windows of the workers' counts go into an
/// [`ordo_batching::Tuner`], and the size it chooses goes to the [`BatchFront`]. No I/O and no
/// clock of its own: the caller passes the time and the counts. A window lasts at least
/// [`ReorderTuning::window_us`] and goes on until it holds
/// [`ReorderTuning::window_commits_min`] commits or has lasted
/// [`ReorderTuning::window_us_max`].
#[derive(Debug)]
struct BatchTuner {
    tuner: Tuner,
    tuning: ReorderTuning,
    /// Start of the current window; `None` before the first observation.
    window_start_us: Option<u64>,
    next_window_us: u64,
    /// The counts at the start of the current window.
    last: Attempts,
}

impl BatchTuner {
    /// A tuner of `config`'s reorder batch, or `None` when there is nothing to tune (no
    /// reordering, or a fixed batch).
    fn new(config: &TablesConfig) -> Result<Option<Self>, TablesError> {
        let tuner = Tuner::new(&config.knobs(), config.tuning.history_len_max)
            .map_err(|error| TablesError::Config(format!("reorder tuning: {error}")))?;
        Ok(tuner.adapts().then_some(BatchTuner {
            tuner,
            tuning: config.tuning,
            window_start_us: None,
            next_window_us: 0,
            last: Attempts::default(),
        }))
    }

    /// The batch size to build with now.
    fn size(&self) -> usize {
        self.tuner.size_of(KNOB_BATCH).expect("the tuner has the batch knob") as usize
    }

    /// When the current window may end (it ends there if it holds enough commits).
    fn next_window_us(&self) -> u64 {
        self.next_window_us
    }

    /// At `now_us`, with the workers' totals: closes the window if it is long enough and holds
    /// enough commits (the first call only opens one), otherwise looks again one `window_us`
    /// later. Returns the new batch size when it changed.
    fn observe(&mut self, now_us: u64, totals: Attempts) -> Option<usize> {
        let committed = totals.committed - self.last.committed;
        let ReorderTuning { window_us, window_commits_min, window_us_max, .. } = self.tuning;
        if let Some(start_us) = self.window_start_us {
            let lasted_us = now_us.saturating_sub(start_us);
            if lasted_us < window_us {
                self.next_window_us = start_us + window_us;
                return None;
            }
            if committed < window_commits_min && lasted_us < window_us_max {
                self.next_window_us = (now_us + window_us).min(start_us + window_us_max);
                return None;
            }
        }
        self.next_window_us = now_us + window_us;
        let aborted = totals.aborted - self.last.aborted;
        self.last = totals;
        self.window_start_us = Some(now_us);
        // No latency figure: the controller's latency guard is off for this knob.
        let observation = WindowObservation { now_us, committed, aborted, latency_us: 0 };
        self.tuner.observe(observation).then(|| self.size())
    }

    /// The sizes chosen over time, for the run's result.
    fn samples(&self) -> Vec<BatchSizeSample> {
        self.tuner
            .history()
            .iter()
            .map(|(t_us, sizes)| BatchSizeSample { t_ms: t_us / 1000, batch: Some(sizes[0]), ..Default::default() })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(threads: usize, batch: BatchSize) -> TablesConfig {
        TablesConfig { reorder: true, threads, batch, ..TablesConfig::default() }
    }

    fn totals(committed: u64, aborted: u64) -> Attempts {
        Attempts { committed, aborted }
    }

    #[test]
    fn only_auto_reorder_batches_are_tuned() {
        let fixed = config(2, BatchSize::fixed(16).unwrap());
        assert!(BatchTuner::new(&fixed).unwrap().is_none());
        assert_eq!(fixed.initial_batch(), 16);
        let direct = TablesConfig { reorder: false, ..config(2, BatchSize::Auto) };
        assert!(BatchTuner::new(&direct).unwrap().is_none(), "no reordering, no batch");
        let auto = config(2, BatchSize::Auto);
        assert_eq!(auto.initial_batch(), 16, "8 per thread");
        assert_eq!(auto.batch_size_max(), 64, "32 per thread");
        let tuner = BatchTuner::new(&auto).unwrap().expect("auto reorder batches are tuned");
        assert_eq!(tuner.size(), 24, "the first round starts on its up side: 16 * 1.5");
    }

    #[test]
    fn the_search_stays_between_the_threads_and_its_maximum() {
        let auto = config(4, BatchSize::Auto);
        let knob = &auto.knobs()[0];
        let bounds = (knob.controller.batch_size_min, knob.controller.batch_size_initial);
        assert_eq!((bounds, knob.controller.batch_size_max), ((4, 32), 128));
        let many =
            TablesConfig { tuning: ReorderTuning { batch_per_thread_max: 10_000, ..ReorderTuning::default() }, ..auto };
        assert_eq!(many.batch_size_max(), REORDER_BATCH_MAX, "never past the conflict graph's bound");
    }

    #[test]
    fn a_window_closes_only_when_long_enough_and_full_enough() {
        let mut tuner = BatchTuner::new(&config(2, BatchSize::Auto)).unwrap().unwrap();
        assert_eq!(tuner.observe(0, totals(0, 0)), None, "the first call opens a window");
        assert_eq!(tuner.next_window_us(), 50_000);
        assert_eq!(tuner.samples().len(), 1);
        // Enough commits, too short: the window goes on until its minimum length.
        assert_eq!(tuner.observe(20_000, totals(5_000, 0)), None);
        assert_eq!(tuner.next_window_us(), 50_000);
        // Long enough, too few commits: it goes on, looking again a window later.
        assert_eq!(tuner.observe(50_000, totals(1_999, 0)), None);
        assert_eq!(tuner.next_window_us(), 100_000);
        // Enough: it closes, and the round's next window measures the centre (16).
        assert_eq!(tuner.observe(100_000, totals(2_000, 7)), Some(16));
        assert_eq!(tuner.last, totals(2_000, 7));
        assert_eq!(tuner.next_window_us(), 150_000);
        // A window that never fills closes at its longest.
        assert_eq!(tuner.observe(1_099_999, totals(2_010, 7)), None);
        assert_eq!(tuner.observe(1_100_000, totals(2_010, 7)), Some(11), "the round's third window: down, 16 / 1.5");
        assert_eq!(tuner.last, totals(2_010, 7));
        assert_eq!(tuner.size(), 11);
    }

    /// A plant whose goodput peaks at a batch of 48 (two threads): the driver's windows walk the
    /// size from where `auto` starts (16) to the peak's neighbourhood, and only within bounds.
    #[test]
    fn the_batch_moves_toward_the_better_size() {
        let mut tuner = BatchTuner::new(&config(2, BatchSize::Auto)).unwrap().unwrap();
        let goodput = |size: usize| {
            let distance = (size as f64 / 48.0).ln();
            100_000.0 * (-distance * distance).exp()
        };
        let (mut now_us, mut committed) = (0, 0);
        tuner.observe(now_us, totals(committed, 0));
        for _ in 0..300 {
            let size = tuner.size();
            assert!((2..=64).contains(&size), "{size} is outside the bounds");
            now_us = tuner.next_window_us();
            committed += (goodput(size) * 0.05) as u64;
            tuner.observe(now_us, totals(committed, 0));
        }
        let samples = tuner.samples();
        assert_eq!(samples[0].batch, Some(16));
        let last = samples.last().unwrap().batch.unwrap();
        assert!((36..=64).contains(&last), "ended at {last}: {samples:?}");
        assert!(samples.windows(2).all(|pair| pair[0].t_ms <= pair[1].t_ms));
    }

    /// A short reorder run over SmallBank's conserved mix (the seed fixes the workload, not the
    /// schedule), with windows short enough for several rounds.
    fn reorder_run(batch: BatchSize) -> TableRunReport {
        use ordo_workload::smallbank::CONSERVED_MIX;
        use ordo_workload::{KvTables, SmallBank, SmallBankConfig};
        let bank = SmallBank::new(SmallBankConfig {
            customers: 500,
            theta: 0.8,
            mix: CONSERVED_MIX,
            seed: 7,
            ..SmallBankConfig::default()
        })
        .unwrap();
        let workload: Arc<dyn TableWorkload> = Arc::new(KvTables::new(Arc::new(bank), 24));
        let tuning = ReorderTuning { window_us: 5_000, window_commits_min: 100, ..ReorderTuning::default() };
        let config = TablesConfig { epoch_ms: 5, tuning, ..config(2, batch) };
        let spec = TableRunSpec {
            seed: 7,
            warmup: Duration::from_millis(50),
            duration: Duration::from_millis(500),
            cooldown: Duration::ZERO,
            record_history: true,
        };
        let report = run(&config, &workload, &spec, |_, _| {}).unwrap();
        assert!(report.recorder.commits() > 0);
        report.consistency.as_ref().expect("the conserved total holds");
        ordo_history::check(&report.history).expect("serializable");
        report
    }

    #[test]
    fn an_auto_batch_is_tuned_while_the_run_stays_serializable() {
        let report = reorder_run(BatchSize::Auto);
        let sizes: Vec<u32> = report.batch_sizes.iter().filter_map(|sample| sample.batch).collect();
        assert!(sizes.len() > 1, "at least one round of the controller: {:?}", report.batch_sizes);
        assert_eq!(sizes[0], 16, "auto starts at 8 per thread");
        assert!(sizes.iter().all(|size| (2..=64).contains(size)), "{sizes:?}");
        let (batches, transactions) = (report.recorder.batches(), report.recorder.batch_transactions());
        // The front starts on the first round's up side (24); one that never heard from the
        // tuner would build only batches of 24.
        assert_ne!(transactions, 24 * batches, "the batches built followed the tuner");
    }

    #[test]
    fn a_fixed_batch_stays_fixed() {
        let report = reorder_run(BatchSize::fixed(6).unwrap());
        assert!(report.batch_sizes.is_empty(), "nothing is tuned: {:?}", report.batch_sizes);
        assert!(report.recorder.batches() > 0);
        assert_eq!(report.recorder.batch_transactions(), 6 * report.recorder.batches(), "every batch held 6");
    }

    #[test]
    fn bad_tuning_is_refused_before_anything_runs() {
        let bad = |tuning: ReorderTuning| TablesConfig { tuning, ..config(2, BatchSize::Auto) }.validate().unwrap_err();
        let short = bad(ReorderTuning { window_us: 10, ..ReorderTuning::default() });
        assert!(short.to_string().contains("window_us 10 is outside 1000..=60000000"), "{short}");
        let inverted = bad(ReorderTuning { window_us_max: 20_000, ..ReorderTuning::default() });
        assert!(inverted.to_string().contains("shorter than window_us"), "{inverted}");
        assert!(
            bad(ReorderTuning { window_commits_min: 0, ..ReorderTuning::default() }).to_string().contains("at least 1")
        );
        assert!(
            bad(ReorderTuning { batch_per_thread_max: 3, ..ReorderTuning::default() })
                .to_string()
                .contains("3 is outside 8..=10000")
        );
        assert!(
            bad(ReorderTuning { history_len_max: 1, ..ReorderTuning::default() })
                .to_string()
                .contains("history_len_max")
        );
        let too_small = config(4, BatchSize::fixed(3).unwrap()).validate().unwrap_err();
        assert!(too_small.to_string().contains("3 transactions cannot feed 4 threads"), "{too_small}");
    }
}
