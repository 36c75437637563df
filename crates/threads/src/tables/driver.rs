//! The driver for table workloads: loads the database, runs worker threads through warm-up,
//! measurement and cool-down, and checks the workload's consistency conditions afterwards.
//!
//! ```text
//!   worker t:  generate(rng, t) ─> begin ─> run(txn, Maintained(SiloTx)) ─> commit
//!                                    ^                 │ Err(Aborted) or failed validation
//!                                    └── backoff <─────┘ (randomized, exponential)
//!   main:      sleep, report progress every PROGRESS_MS; then stop, join, merge
//!   after:     workload.check through one read-only attempt
//! ```
//!
//! Latency counts from a transaction's first attempt to its commit. A user abort (TPC-C's
//! rolled-back NewOrder) is counted and not retried. Commits per procedure come from the
//! harness's `Recorder`; aborts per procedure are counted here (the recorder has no such
//! count yet). The backoff loop is a copy of the key-value driver's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam::utils::CachePadded;
use ordo_harness::{AbortCause, Recorder, Window};
use ordo_history::HistoryEntry;
use ordo_workload::{
    Aborted, ConsistencyError, ConsistencyReport, Maintained, Outcome, Scratch, TableWorkload, Txn, rng_from_seed,
};
use rand::Rng;

use super::database::{Index, LoadError};
use super::silo::{EPOCH_MS_DEFAULT, SiloTables, SiloWorker, TABLE_WORKERS_MAX};

/// Progress between two reports.
const PROGRESS_MS: u64 = 100;
/// Backoff after the n-th abort spins up to `2^min(n + 4, BACKOFF_SHIFT_MAX)` times.
const BACKOFF_SHIFT_MAX: u32 = 10;
/// Attempts of the read-only consistency check before giving up (the database is quiescent,
/// so the first one commits unless something is wrong).
const CHECK_ATTEMPTS_MAX: usize = 3;

/// The engine's knobs for table workloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TablesConfig {
    /// Worker threads.
    pub threads: usize,
    pub index: Index,
    /// Silo's epoch period.
    pub epoch_ms: u64,
    /// Threads that load the database (0: as many as workers, at least 2).
    pub load_threads: usize,
}

impl Default for TablesConfig {
    fn default() -> Self {
        TablesConfig { threads: 2, index: Index::Tree, epoch_ms: EPOCH_MS_DEFAULT, load_threads: 0 }
    }
}

/// How long and how a run goes.
#[derive(Debug, Clone)]
pub struct TableRunSpec {
    pub seed: u64,
    pub warmup: Duration,
    pub duration: Duration,
    pub cooldown: Duration,
    /// Keep every committed transaction's reads and writes (see the module docs of
    /// [`crate::tables`] for the encoding).
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
}

/// Why a run could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TablesError {
    #[error("invalid engine configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// Runs `workload` on Silo over tables; `progress(elapsed_s, commits)` is called every
/// [`PROGRESS_MS`].
pub fn run(
    config: &TablesConfig,
    workload: &Arc<dyn TableWorkload>,
    spec: &TableRunSpec,
    mut progress: impl FnMut(f64, u64),
) -> Result<TableRunReport, TablesError> {
    if config.threads == 0 || config.threads > TABLE_WORKERS_MAX {
        return Err(TablesError::Config(format!("threads must be 1..={TABLE_WORKERS_MAX}, not {}", config.threads)));
    }
    let loading = Instant::now();
    let load_threads = if config.load_threads == 0 { config.threads.max(2) } else { config.load_threads };
    let silo = SiloTables::load(workload.as_ref(), config.index, load_threads, config.epoch_ms)?;
    let load_s = loading.elapsed().as_secs_f64();
    let micros = |d: Duration| d.as_micros() as u64;
    let shared = Shared {
        silo: &silo,
        workload: workload.as_ref(),
        spec,
        start: Instant::now(),
        window: Window::after_warmup(micros(spec.warmup), micros(spec.duration)),
        stop: AtomicBool::new(false),
        commits: (0..config.threads).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
    };
    let total = spec.warmup + spec.duration + spec.cooldown;
    let results: Vec<WorkerResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..config.threads)
            .map(|index| {
                let shared = &shared;
                std::thread::Builder::new()
                    .name(format!("tables-worker-{index}"))
                    .spawn_scoped(scope, move || worker(shared, index))
                    .expect("spawning a worker")
            })
            .collect();
        while let Some(left) = total.checked_sub(shared.start.elapsed()).filter(|left| !left.is_zero()) {
            std::thread::sleep(left.min(Duration::from_millis(PROGRESS_MS)));
            let commits = shared.commits.iter().map(|c| c.load(Ordering::Relaxed)).sum();
            progress(shared.start.elapsed().as_secs_f64(), commits);
        }
        shared.stop.store(true, Ordering::Relaxed);
        handles.into_iter().map(|h| h.join().expect("a worker panicked")).collect()
    });
    let mut recorder = Recorder::new(shared.window);
    let mut history = Vec::new();
    let mut aborts_by_procedure = Vec::new();
    for result in results {
        recorder.merge(&result.recorder);
        history.extend(result.history);
        add_counts(&mut aborts_by_procedure, &result.aborts_by_procedure);
    }
    let consistency = check(&silo, workload.as_ref());
    Ok(TableRunReport {
        recorder,
        aborts_by_procedure,
        measured_s: spec.duration.as_secs_f64(),
        history,
        load_s,
        threads: config.threads,
        index: config.index,
        consistency,
    })
}

/// Runs the workload's consistency check through a read-only attempt (worker 0's id space is
/// not used: the check records no history).
pub fn check(silo: &SiloTables, workload: &dyn TableWorkload) -> Result<ConsistencyReport, ConsistencyError> {
    let mut worker = silo.worker(0, false);
    let mut row = Vec::new();
    let mut last = None;
    for _ in 0..CHECK_ATTEMPTS_MAX {
        let mut tx = silo.begin(&mut worker);
        let report = workload.check(&mut Maintained::new(workload.schema(), &mut tx, &mut row));
        match tx.commit() {
            Ok(()) => return report,
            Err(Aborted) => last = Some(report),
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
struct Shared<'a> {
    silo: &'a SiloTables,
    workload: &'a dyn TableWorkload,
    spec: &'a TableRunSpec,
    start: Instant,
    window: Window,
    stop: AtomicBool,
    commits: Vec<CachePadded<AtomicU64>>,
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
    /// The run stopped while the transaction was retrying.
    Stopped,
}

/// Runs `txn` on `worker` until it commits or its procedure gives up; `on_abort(restarts)` is
/// called after every aborted attempt and returns whether to retry.
pub fn run_transaction(
    silo: &SiloTables,
    worker: &mut SiloWorker,
    workload: &dyn TableWorkload,
    txn: &Txn,
    scratch: &mut Scratch,
    row: &mut Vec<u64>,
    mut on_abort: impl FnMut(u32) -> bool,
) -> (Finished, u32) {
    let mut restarts = 0u32;
    loop {
        let mut tx = silo.begin(worker);
        let outcome = workload.run(txn, &mut Maintained::new(workload.schema(), &mut tx, row), scratch);
        let committed = match outcome {
            Ok(Outcome::Commit) => tx.commit(),
            Ok(Outcome::UserAbort) => {
                tx.abort();
                return (Finished::UserAborted, restarts);
            }
            Err(Aborted) => {
                tx.abort();
                Err(Aborted)
            }
        };
        if committed.is_ok() {
            return (Finished::Committed, restarts);
        }
        restarts += 1;
        if !on_abort(restarts) {
            return (Finished::Stopped, restarts);
        }
    }
}

fn worker(shared: &Shared<'_>, index: usize) -> WorkerResult {
    let seed = shared.spec.seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut rng = rng_from_seed(seed);
    let mut backoff_rng = rng_from_seed(seed.rotate_left(17));
    let mut silo_worker = shared.silo.worker(index, shared.spec.record_history);
    let mut recorder = Recorder::new(shared.window);
    let mut aborts_by_procedure = vec![0u64; shared.workload.procedure_names().len()];
    let (mut txn, mut scratch, mut row) = (Txn::default(), Scratch::default(), Vec::new());
    let mut committed = 0u64;
    while !shared.stop.load(Ordering::Relaxed) {
        shared.workload.generate(&mut rng, index, &mut txn);
        let first_start = Instant::now();
        let procedure = usize::from(txn.procedure);
        let (finished, restarts) =
            run_transaction(shared.silo, &mut silo_worker, shared.workload, &txn, &mut scratch, &mut row, |restarts| {
                let now = shared.start.elapsed().as_micros() as u64;
                recorder.abort(now, AbortCause::Conflict);
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
            });
        let now = shared.start.elapsed().as_micros() as u64;
        match finished {
            Finished::Committed => {
                recorder.commit(now, first_start.elapsed().as_micros() as u64, restarts, txn.procedure);
                committed += 1;
                shared.commits[index].store(committed, Ordering::Relaxed);
            }
            Finished::UserAborted => recorder.user_abort(now),
            Finished::Stopped => {}
        }
    }
    WorkerResult { recorder, aborts_by_procedure, history: std::mem::take(silo_worker.history()) }
}
