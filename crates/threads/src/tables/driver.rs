//! The driver for table workloads: loads the database, runs worker threads through warm-up,
//! measurement and cool-down under any [`TableProtocol`], and checks the workload's
//! consistency conditions afterwards.
//!
//! ```text
//!  direct :  worker t:  generate(rng, t) ─> run (retry on abort, backoff) ─> record ─> ...
//!
//!  reorder:  worker t:  pop its queue ─> run (retry on abort) ─> pop ...
//!                       queue empty: build the next batch (every worker can build):
//!                       generate `batch` txns ─> footprints ─> ThreadAssigner (§4.2:
//!                       conflicting txns to the same thread) ─> each share to its queue;
//!                       another queue waiting: take over its oldest share instead
//!  main:     sleep, report progress every PROGRESS_MS; then stop, join, merge
//!  after:    quiesce every worker; workload.check through one read-only attempt
//! ```
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
use ordo_harness::{AbortCause, Recorder, Window};
use ordo_history::HistoryEntry;
use ordo_log::{Dir, Durability, FileDir, Logger, WorkerLog};
use ordo_reorder::{ThreadAssigner, TxnFootprint};
use ordo_storage::{Direction, TableId};
use ordo_workload::{
    Aborted, ConsistencyError, ConsistencyReport, Maintained, Outcome, Scratch, TableWorkload, Tx, Txn, WorkloadRng,
    rng_from_seed,
};
use parking_lot::Mutex;
use rand::Rng;

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
use crate::config::ProtocolKind;
use crate::protocol::Spin;

/// Progress between two reports.
const PROGRESS_MS: u64 = 100;
/// Backoff after the n-th abort spins up to `2^min(n + 4, BACKOFF_SHIFT_MAX)` times.
const BACKOFF_SHIFT_MAX: u32 = 10;
/// Attempts of the read-only consistency check before giving up (the database is quiescent,
/// so the first one commits unless something is wrong).
const CHECK_ATTEMPTS_MAX: usize = 3;
/// Largest reorder batch (its conflict graph takes `n^2` bits).
pub const REORDER_BATCH_MAX: usize = 10_000;
/// Reorder batches hold this many transactions per thread unless set.
pub const REORDER_BATCH_PER_THREAD: usize = 4;
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
    /// Transactions per reorder batch (`None`: [`REORDER_BATCH_PER_THREAD`] per thread).
    pub batch: Option<usize>,
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
}

impl Default for TablesConfig {
    fn default() -> Self {
        TablesConfig {
            protocol: ProtocolKind::Silo,
            reorder: false,
            batch: None,
            threads: 2,
            index: Index::Tree,
            epoch_ms: EPOCH_MS_DEFAULT,
            load_threads: None,
            wal: None,
            durability: Durability::Off,
            checkpoint: CheckpointPolicy::default(),
            versions: super::mvcc::VERSIONS_DEFAULT,
        }
    }
}

impl TablesConfig {
    /// Threads that actually run (`serial` runs one).
    pub fn effective_threads(&self) -> usize {
        if self.protocol.concurrent() { self.threads } else { 1 }
    }

    /// The reorder batch size.
    pub fn effective_batch(&self) -> usize {
        self.batch.unwrap_or(REORDER_BATCH_PER_THREAD * self.effective_threads())
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
            let batch = self.effective_batch();
            if batch > REORDER_BATCH_MAX {
                return invalid(format!("batch: {batch} transactions, at most {REORDER_BATCH_MAX}"));
            }
            if batch < self.threads {
                return invalid(format!("batch: {batch} transactions cannot feed {} threads", self.threads));
            }
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
/// every [`PROGRESS_MS`].
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
        let shared = Shared {
            protocol,
            workload: self.workload,
            spec: self.spec,
            start: Instant::now(),
            window: Window::after_warmup(micros(self.spec.warmup), micros(self.spec.duration)),
            stop: AtomicBool::new(false),
            commits: (0..threads).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
            threads,
            batch: self.config.reorder.then(|| BatchFront::new(threads, self.config.effective_batch())),
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
                    let log = logs[index].take();
                    std::thread::Builder::new()
                        .name(format!("tables-worker-{index}"))
                        .spawn_scoped(scope, move || worker(shared, index, log))
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
            while let Some(left) = total.checked_sub(shared.start.elapsed()).filter(|left| !left.is_zero()) {
                if shared.failure.lock().is_some() {
                    break;
                }
                std::thread::sleep(left.min(tick));
                if let Some(sink) = on_acknowledged.as_deref_mut() {
                    shared.stream_acknowledged(sink, &mut batch);
                }
                let elapsed = shared.start.elapsed();
                if elapsed.saturating_sub(last_progress) >= Duration::from_millis(PROGRESS_MS) {
                    last_progress = elapsed;
                    let commits = shared.commits.iter().map(|c| c.load(Ordering::Relaxed)).sum();
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
    start: Instant,
    window: Window,
    stop: AtomicBool,
    commits: Vec<CachePadded<AtomicU64>>,
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

impl<P> Shared<'_, P> {
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
    /// When its first attempt started (latency counts from here to the acknowledgment).
    started: Instant,
    restarts: u32,
    procedure: u8,
    /// Rows its committed attempt read (point reads, rows returned by scans).
    rows: RowCounts,
    entry: Option<HistoryEntry>,
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
    committed: u64,
    /// With a log: committed transactions not acknowledged yet, oldest first.
    unacknowledged: VecDeque<Unacknowledged>,
    /// With a log and histories collected in the report: acknowledged entries.
    acknowledged_history: Vec<HistoryEntry>,
    shared: &'a Shared<'a, P>,
}

impl<P: TableProtocol> WorkerState<'_, P> {
    /// Runs `txn` until it commits or its procedure refuses (or the run is stopping).
    fn run_transaction(&mut self, txn: &Txn, first_start: Instant) {
        let shared = self.shared;
        let procedure = usize::from(txn.procedure);
        let (recorder, aborts_by_procedure, backoff_rng) =
            (&mut self.recorder, &mut self.aborts_by_procedure, &mut self.backoff_rng);
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
                let now = now_us(shared.start);
                recorder.abort(now, cause);
                if shared.window.contains(now) {
                    if aborts_by_procedure.len() <= procedure {
                        aborts_by_procedure.resize(procedure + 1, 0);
                    }
                    aborts_by_procedure[procedure] += 1;
                }
                if shared.stop.load(Ordering::Relaxed) {
                    return false;
                }
                let spins = backoff_rng.random_range(0..1u32 << (restarts + 4).min(BACKOFF_SHIFT_MAX));
                (0..spins).for_each(|_| std::hint::spin_loop());
                true
            },
        );
        let now = now_us(shared.start);
        match finished {
            Finished::Committed if shared.logged => {
                let entry = if shared.spec.record_history { P::history(&mut self.protocol_worker).pop() } else { None };
                self.unacknowledged.push_back(Unacknowledged {
                    epoch,
                    started: first_start,
                    restarts,
                    procedure: txn.procedure,
                    rows,
                    entry,
                });
                self.acknowledge();
                if self.unacknowledged.len() >= UNACKNOWLEDGED_PER_WORKER_MAX {
                    self.wait_for_acknowledgments(UNACKNOWLEDGED_PER_WORKER_MAX / 2);
                }
            }
            Finished::Committed => {
                self.recorder.commit(now, first_start.elapsed().as_micros() as u64, restarts, txn.procedure);
                self.recorder.rows(now, rows.point_reads, rows.scan_rows);
                self.committed += 1;
                shared.commits[self.index].store(self.committed, Ordering::Relaxed);
            }
            Finished::UserAborted => self.recorder.user_abort(now),
            Finished::Stopped => {}
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
        let mut acknowledged = 0;
        let now = Instant::now();
        let now_us = now.duration_since(shared.start).as_micros() as u64;
        while let Some(front) = self.unacknowledged.front()
            && front.epoch <= limit
        {
            let done = self.unacknowledged.pop_front().expect("front exists");
            let latency_us = now.duration_since(done.started).as_micros() as u64;
            self.recorder.commit(now_us, latency_us, done.restarts, done.procedure);
            self.recorder.rows(now_us, done.rows.point_reads, done.rows.scan_rows);
            if let Some(entry) = done.entry {
                match shared.acknowledged.get(self.index) {
                    Some(queue) => queue.push(entry),
                    None => self.acknowledged_history.push(entry),
                }
            }
            acknowledged += 1;
        }
        if acknowledged > 0 {
            self.committed += acknowledged;
            shared.commits[self.index].store(self.committed, Ordering::Relaxed);
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

/// Microseconds since `start`.
#[inline]
fn now_us(start: Instant) -> u64 {
    start.elapsed().as_micros() as u64
}

fn worker<P: TableProtocol>(shared: &Shared<'_, P>, index: usize, log: Option<WorkerLog>) -> WorkerResult {
    let seed = shared.spec.seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let options = WorkerOptions { index, workers: shared.threads, record_history: shared.spec.record_history };
    let mut protocol_worker = shared.protocol.worker(options);
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
        unacknowledged: VecDeque::new(),
        acknowledged_history: Vec::new(),
        shared,
    };
    match &shared.batch {
        None => {
            let mut txn = Txn::default();
            while !shared.stop.load(Ordering::Relaxed) {
                shared.workload.generate(&mut state.rng, index, &mut txn);
                state.run_transaction(&txn, Instant::now());
            }
        }
        Some(front) => front.work(&mut state),
    }
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

/// A transaction waiting in a batch, with the time it entered.
type Queued = (Txn, Instant);

/// Reorder mode's batching front. A worker whose queue runs dry builds the next batch: it
/// generates `batch_size` transactions, splits them over the threads with the thread-aware
/// policy (§4.2) and appends each thread's share, in the assigned order and as one unit, to
/// that thread's queue. Every worker builds with its own generator and scratch space, so
/// building runs in parallel like generation does in direct mode. A worker whose queue is
/// empty while another's holds a share takes that share instead of building, so threads stay
/// within a batch of each other, a transaction waits behind at most one share, and a
/// descheduled thread stalls nobody.
struct BatchFront {
    batch_size: usize,
    /// Shares per thread; lock-free, so a polling worker never blocks the queue's owner.
    queues: Vec<CachePadded<SegQueue<Vec<Queued>>>>,
}

/// One worker's batch-building state.
#[derive(Default)]
struct Builder {
    batch: Vec<Queued>,
    footprints: Vec<TxnFootprint>,
    assigner: ThreadAssigner,
    assignment: Vec<Vec<usize>>,
    slots: Vec<Option<Queued>>,
    /// Spent transactions and share buffers, reused.
    spare_txns: Vec<Txn>,
    spare_shares: Vec<Vec<Queued>>,
}

/// Spent transactions a worker keeps for reuse (their key buffers).
const SPARE_TXNS_MAX: usize = 256;

impl BatchFront {
    fn new(threads: usize, batch_size: usize) -> Self {
        BatchFront { batch_size, queues: (0..threads).map(|_| CachePadded::new(SegQueue::new())).collect() }
    }

    fn work<P: TableProtocol>(&self, state: &mut WorkerState<'_, P>) {
        let shared = state.shared;
        let mut builder = Builder::default();
        let mut spin = Spin::default();
        while !shared.stop.load(Ordering::Relaxed) {
            if let Some(mut share) = self.queues[state.index].pop() {
                for (txn, entered) in share.drain(..) {
                    state.run_transaction(&txn, entered);
                    if builder.spare_txns.len() < SPARE_TXNS_MAX {
                        builder.spare_txns.push(txn);
                    }
                }
                builder.spare_shares.push(share);
                continue;
            }
            // Another thread is behind (descheduled, or its share was slow): rather than wait
            // for it, run its oldest queued share here. A share moves whole, so the
            // transactions the assignment grouped still run together, one after another.
            if let Some(behind) = self.queues.iter().filter(|q| !q.is_empty()).max_by_key(|q| q.len()) {
                match behind.pop() {
                    Some(share) => self.queues[state.index].push(share),
                    None => spin.wait(),
                }
                continue;
            }
            self.build(&mut builder, state);
            spin = Spin::default();
        }
    }

    /// Generates a batch, assigns it to threads and queues the shares.
    fn build<P: TableProtocol>(&self, builder: &mut Builder, state: &mut WorkerState<'_, P>) {
        let shared = state.shared;
        let entered = Instant::now();
        builder.batch.clear();
        for i in 0..self.batch_size {
            let mut txn = builder.spare_txns.pop().unwrap_or_default();
            // Workloads that bind transactions to workers (TPC-C's home warehouses) draw a
            // batch as the threads together would.
            shared.workload.generate(&mut state.rng, i % shared.threads, &mut txn);
            builder.batch.push((txn, entered));
        }
        builder.footprints.resize_with(self.batch_size, TxnFootprint::default);
        for ((txn, _), footprint) in builder.batch.iter().zip(&mut builder.footprints) {
            footprint.reads.clear();
            footprint.writes.clear();
            shared.workload.footprint(txn, &mut footprint.reads, &mut footprint.writes);
        }
        builder
            .assigner
            .assign_evenly(&builder.footprints, shared.threads, &mut builder.assignment)
            .expect("a batch of at least one transaction per thread");
        builder.slots.clear();
        builder.slots.extend(builder.batch.drain(..).map(Some));
        for (queue, assigned) in self.queues.iter().zip(&builder.assignment) {
            let mut share = builder.spare_shares.pop().unwrap_or_default();
            share.extend(assigned.iter().map(|&i| builder.slots[i].take().expect("assigned once")));
            queue.push(share);
        }
        let now = now_us(shared.start);
        state.recorder.batch(now, self.batch_size, 0, entered.elapsed().as_nanos() as u64);
    }
}
