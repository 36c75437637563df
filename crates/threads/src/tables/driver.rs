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
//! An aborted attempt retries on the same worker after a randomized exponential backoff.
//! Latency counts from a transaction's first attempt (in reorder mode: from when it entered
//! its batch) to its commit. A user abort (TPC-C's rolled-back NewOrder) is counted and not
//! retried. Commits per procedure come from the harness's `Recorder`; aborts per procedure
//! are counted here. Transactions never cross batch boundaries: each is assigned within its
//! own batch, and a share moves between threads only whole. The main thread only sleeps and
//! reports progress, so exactly `threads` threads are busy (plus the epoch clock's sleeper).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam::queue::SegQueue;
use crossbeam::utils::CachePadded;
use ordo_harness::{AbortCause, Recorder, Window};
use ordo_history::HistoryEntry;
use ordo_reorder::{ThreadAssigner, TxnFootprint};
use ordo_storage::{Direction, TableId};
use ordo_workload::{
    Aborted, ConsistencyError, ConsistencyReport, Maintained, Outcome, Scratch, TableWorkload, Tx, Txn, WorkloadRng,
    rng_from_seed,
};
use rand::Rng;

use super::database::{Index, LoadError};
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
}

/// Why a run could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TablesError {
    #[error("invalid engine configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// Runs `workload` on the protocol `config` names; `progress(elapsed_s, commits)` is called
/// every [`PROGRESS_MS`].
pub fn run(
    config: &TablesConfig,
    workload: &Arc<dyn TableWorkload>,
    spec: &TableRunSpec,
    progress: impl FnMut(f64, u64),
) -> Result<TableRunReport, TablesError> {
    config.validate()?;
    let loading = Instant::now();
    let threads = config.effective_threads();
    let load_threads = config.load_threads.unwrap_or(threads.max(2));
    let run = Run { loading, config, workload: workload.as_ref(), spec, progress };
    match config.protocol {
        ProtocolKind::Silo => {
            let silo = SiloTables::load(workload.as_ref(), config.index, load_threads, Epochs::clock(config.epoch_ms))?;
            Ok(run.drive(&silo))
        }
        ProtocolKind::TicToc => {
            let tictoc =
                TicTocTables::load(workload.as_ref(), config.index, load_threads, Epochs::clock(config.epoch_ms))?;
            Ok(run.drive(&tictoc))
        }
        ProtocolKind::NoWait | ProtocolKind::WaitDie => {
            let epochs = Epochs::clock(config.epoch_ms);
            let two_phase =
                TwoPhaseTables::load(workload.as_ref(), config.index, load_threads, epochs, config.protocol)?;
            Ok(run.drive(&two_phase))
        }
        ProtocolKind::Serial => {
            let serial =
                SerialTables::load(workload.as_ref(), config.index, load_threads, Epochs::clock(config.epoch_ms))?;
            Ok(run.drive(&serial))
        }
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
            let epochs = Epochs::clock(config.epoch_ms);
            let mvcc =
                MvccTables::load(workload.as_ref(), config.index, load_threads, epochs, isolation, config.versions)?;
            Ok(run.drive(&mvcc))
        }
    }
}

/// A run's arguments, independent of the protocol.
struct Run<'a, F> {
    loading: Instant,
    config: &'a TablesConfig,
    workload: &'a dyn TableWorkload,
    spec: &'a TableRunSpec,
    progress: F,
}

impl<F: FnMut(f64, u64)> Run<'_, F> {
    fn drive<P: TableProtocol>(mut self, protocol: &P) -> TableRunReport {
        let load_s = self.loading.elapsed().as_secs_f64();
        let threads = self.config.effective_threads();
        let micros = |d: Duration| d.as_micros() as u64;
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
        };
        let total = self.spec.warmup + self.spec.duration + self.spec.cooldown;
        let results: Vec<WorkerResult> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
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
                (self.progress)(shared.start.elapsed().as_secs_f64(), commits);
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
        history.sort_unstable_by_key(|entry| entry.id);
        let consistency = check(protocol, self.workload);
        TableRunReport {
            recorder,
            aborts_by_procedure,
            measured_s: self.spec.duration.as_secs_f64(),
            history,
            load_s,
            threads,
            index: self.config.index,
            consistency,
        }
    }
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
/// cause)` (called after every aborted attempt) returns `false`.
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
    mut on_abort: impl FnMut(u32, AbortCause) -> bool,
) -> (Finished, u32) {
    let mut restarts = 0u32;
    loop {
        let mut tx = protocol.begin(worker, restarts > 0);
        let mut counted =
            Counted { inner: Maintained::new(workload.schema(), &mut tx, row), rows: RowCounts::default() };
        let outcome = workload.run(txn, &mut counted, scratch);
        let attempt_rows = counted.rows;
        let committed = match outcome {
            Ok(Outcome::Commit) => P::commit(tx),
            Ok(Outcome::UserAbort) => {
                P::abort(tx);
                return (Finished::UserAborted, restarts);
            }
            Err(Aborted) => Err(P::abort(tx)),
        };
        match committed {
            Ok(_) => {
                rows.point_reads += attempt_rows.point_reads;
                rows.scan_rows += attempt_rows.scan_rows;
                return (Finished::Committed, restarts);
            }
            Err(cause) => {
                restarts += 1;
                if !on_abort(restarts, cause) {
                    return (Finished::Stopped, restarts);
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
        let (finished, restarts) = run_transaction_counted(
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
}

/// Microseconds since `start`.
#[inline]
fn now_us(start: Instant) -> u64 {
    start.elapsed().as_micros() as u64
}

fn worker<P: TableProtocol>(shared: &Shared<'_, P>, index: usize) -> WorkerResult {
    let seed = shared.spec.seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let options = WorkerOptions { index, workers: shared.threads, record_history: shared.spec.record_history };
    let mut state = WorkerState {
        index,
        protocol_worker: shared.protocol.worker(options),
        rng: rng_from_seed(seed),
        backoff_rng: rng_from_seed(seed.rotate_left(17)),
        recorder: Recorder::new(shared.window),
        aborts_by_procedure: vec![0; shared.workload.procedure_names().len()],
        scratch: Scratch::default(),
        row: Vec::new(),
        committed: 0,
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
    shared.protocol.quiesce(&mut state.protocol_worker);
    WorkerResult {
        recorder: state.recorder,
        aborts_by_procedure: state.aborts_by_procedure,
        history: std::mem::take(P::history(&mut state.protocol_worker)),
    }
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
