//! The driver: loads the store, runs worker threads for warm-up + measurement + cool-down, and
//! merges what they measured.
//!
//! ```text
//!  direct :  worker t:  generate ─> run (retry on abort, backoff) ─> record ─> generate ...
//!
//!  reorder:  worker t:  pop its queue ─> run (retry on abort) ─> pop ...
//!                       queue empty: build the next batch of 4 x threads (sticky thread-aware
//!                       assignment, §4.2), or take over a share of a thread far behind
//!                       (see [`crate::batch_front`])
//! ```
//!
//! Workers run whole transactions synchronously through the [`Protocol`] interface; an aborted
//! attempt retries on the same worker after a randomized exponential backoff, and latency
//! counts from the transaction's first start (for reorder: from when it entered its batch) to
//! its commit. Transactions never cross batch boundaries: each is assigned within its own batch,
//! and a share moves between threads only whole. The main thread only sleeps and
//! reports progress, so exactly `threads` threads are busy (plus Silo's sleeping epoch thread).
//! The reorder batch is fixed here ([`EngineConfig::batch`]); the engine over tables
//! ([`crate::tables::driver`]) also tunes it online (`auto`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam::utils::CachePadded;
use ordo_harness::{Recorder, RunClock, Window};
use ordo_history::HistoryEntry;
use ordo_workload::{Key, KeyFilter, Requests, Step, Txn, TxnPool, Value, Workload, WorkloadRng, rng_from_seed};

use crate::batch_front::{self, BatchFront, ShareWorker};
use crate::config::{ConfigError, EngineConfig, ProtocolKind};
use crate::mvcc::{Isolation, Mvcc};
use crate::protocol::{Abort, Protocol};
use crate::serial::Serial;
use crate::silo::Silo;
use crate::tictoc::TicToc;
use crate::two_phase::{Deadlock, TwoPhaseLocking};

/// How long and how a run goes.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub seed: u64,
    pub warmup: Duration,
    pub duration: Duration,
    pub cooldown: Duration,
    /// Keep every committed transaction's reads and writes.
    pub record_history: bool,
}

/// What a run measured.
#[derive(Debug)]
pub struct RunReport {
    pub recorder: Recorder,
    pub measured_s: f64,
    /// Committed transactions, when recorded.
    pub history: Vec<HistoryEntry>,
    /// Seconds spent loading the store.
    pub load_s: f64,
    pub threads: usize,
    /// `(initial, final)` sum over the workload's conserved keys, if it has them.
    pub conserved: Option<(i64, i64)>,
}

/// Progress between two reports.
const PROGRESS_MS: u64 = 100;

/// Runs `workload` on the engine `config` describes; `progress(elapsed_s, commits)` is called
/// every 100 ms.
pub fn run(
    config: &EngineConfig,
    workload: &Arc<dyn Workload>,
    spec: &RunSpec,
    progress: impl FnMut(f64, u64),
) -> Result<RunReport, ConfigError> {
    config.validate()?;
    let store = StoreParams {
        workload: workload.as_ref(),
        payload_bytes: config.payload_bytes,
        versions: config.versions,
        load_threads: config.effective_threads(),
    };
    let run = Run { loading_started: Instant::now(), config, workload, spec, progress };
    Ok(match config.protocol {
        ProtocolKind::Silo => run.drive(store.silo()),
        ProtocolKind::TicToc => run.drive(store.tictoc()),
        ProtocolKind::NoWait => run.drive(store.two_phase(Deadlock::NoWait)),
        ProtocolKind::WaitDie => run.drive(store.two_phase(Deadlock::WaitDie)),
        ProtocolKind::MvccSi => run.drive(store.mvcc(Isolation::Snapshot)),
        ProtocolKind::Ssi => run.drive(store.mvcc(Isolation::SerialSafetyNet)),
        ProtocolKind::Serial => run.drive(store.serial()),
    })
}

/// What every protocol's store is built from: the workload's initial values, the inline
/// payload, the MVCC ring depth, and how many threads load it.
#[derive(Clone, Copy)]
pub struct StoreParams<'a> {
    pub workload: &'a dyn Workload,
    pub payload_bytes: usize,
    pub versions: usize,
    pub load_threads: usize,
}

impl std::fmt::Debug for StoreParams<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreParams")
            .field("workload", &self.workload.name())
            .field("payload_bytes", &self.payload_bytes)
            .field("versions", &self.versions)
            .field("load_threads", &self.load_threads)
            .finish()
    }
}

impl StoreParams<'_> {
    #[must_use]
    pub fn silo(self) -> Silo {
        Silo::new(self.workload, self.payload_bytes, self.load_threads)
    }

    #[must_use]
    pub fn tictoc(self) -> TicToc {
        TicToc::new(self.workload, self.payload_bytes, self.load_threads)
    }

    #[must_use]
    pub fn two_phase(self, deadlock: Deadlock) -> TwoPhaseLocking {
        TwoPhaseLocking::new(self.workload, self.payload_bytes, self.load_threads, deadlock)
    }

    #[must_use]
    pub fn mvcc(self, isolation: Isolation) -> Mvcc {
        Mvcc::new(self.workload, self.payload_bytes, self.load_threads, self.versions, isolation)
    }

    /// Serial runs one thread, so it loads on one.
    #[must_use]
    pub fn serial(self) -> Serial {
        Serial::new(self.workload, self.payload_bytes, 1)
    }
}

/// A run's arguments, independent of the protocol: [`Run::drive`] is the one generic entry.
struct Run<'a, F> {
    /// When loading the store began (the protocol is built before `drive` is called).
    loading_started: Instant,
    config: &'a EngineConfig,
    workload: &'a Arc<dyn Workload>,
    spec: &'a RunSpec,
    progress: F,
}

impl<F: FnMut(f64, u64)> Run<'_, F> {
    fn drive<P: Protocol>(self, protocol: P) -> RunReport {
        drive(protocol, self.loading_started, self.config, self.workload, self.spec, self.progress)
    }
}

/// Everything a worker shares with the others.
struct Shared<'a, P: Protocol> {
    protocol: &'a P,
    workload: &'a dyn Workload,
    spec: &'a RunSpec,
    /// The run's clock, started when the workers are.
    clock: RunClock,
    window: Window,
    stop: AtomicBool,
    commits: Vec<CachePadded<AtomicU64>>,
    /// Request each transaction's footprint, and the next one's, when it starts.
    prefetch: bool,
    batch: Option<BatchFront>,
}

#[allow(clippy::needless_pass_by_value)] // the store lives for exactly this run
fn drive<P: Protocol>(
    protocol: P,
    loading_started: Instant,
    config: &EngineConfig,
    workload: &Arc<dyn Workload>,
    spec: &RunSpec,
    mut progress: impl FnMut(f64, u64),
) -> RunReport {
    let load_s = loading_started.elapsed().as_secs_f64();
    let protocol = &protocol;
    let threads = config.effective_threads();
    let pregenerate = config.pregenerate.filter(|_| workload.replayable());
    let generate = |rng: &mut WorkloadRng, _worker: usize, txn: &mut Txn| workload.generate(rng, txn);
    let pools = crate::pregenerate::draw(pregenerate, threads, spec.seed, &generate);
    let micros = |d: Duration| d.as_micros() as u64;
    let window = Window::after_warmup(micros(spec.warmup), micros(spec.duration));
    let shared = Shared {
        protocol,
        workload: workload.as_ref(),
        spec,
        clock: RunClock::start(),
        window,
        stop: AtomicBool::new(false),
        commits: (0..threads).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
        prefetch: config.prefetch,
        batch: config.reorder.then(|| BatchFront::new(threads, config.effective_batch(), config.assignment)),
    };
    let total = spec.warmup + spec.duration + spec.cooldown;
    let results: Vec<(Recorder, Vec<HistoryEntry>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = pools
            .into_iter()
            .enumerate()
            .map(|(index, pool)| {
                let shared = &shared;
                std::thread::Builder::new()
                    .name(format!("worker-{index}"))
                    .spawn_scoped(scope, move || worker(shared, index, pool))
                    .expect("spawning a worker")
            })
            .collect();
        while let Some(left) = total.checked_sub(shared.clock.elapsed()).filter(|left| !left.is_zero()) {
            std::thread::sleep(left.min(Duration::from_millis(PROGRESS_MS)));
            let commits = shared.commits.iter().map(|c| c.load(Ordering::Relaxed)).sum();
            progress(shared.clock.elapsed().as_secs_f64(), commits);
        }
        shared.stop.store(true, Ordering::Relaxed);
        handles.into_iter().map(|h| h.join().expect("a worker panicked")).collect()
    });
    let mut recorder = Recorder::new(window);
    let mut history = Vec::new();
    for (part, entries) in results {
        recorder.merge(&part);
        history.extend(entries);
    }
    let conserved = workload.conserved_keys().map(|range| {
        let initial = range.clone().map(|k| workload.initial_value(k)).sum();
        let final_sum = range.map(|k| protocol.committed_value(k)).sum();
        (initial, final_sum)
    });
    RunReport { recorder, measured_s: spec.duration.as_secs_f64(), history, load_s, threads, conserved }
}

/// Per-worker execution buffers, reused by every transaction (no allocation per operation).
#[derive(Default)]
struct Exec {
    values: Vec<Value>,
    reads: Vec<Key>,
    writes: Vec<(Key, Value)>,
    footprint_reads: Vec<Key>,
    update_keys: Vec<Key>,
    /// The keys of `update_keys`.
    updates: KeyFilter,
    prefetch_reads: Vec<Key>,
    prefetch_writes: Vec<Key>,
}

/// How an attempt ended.
enum Outcome {
    Committed,
    UserAbort,
}

/// One attempt of `txn`. A one-shot transaction (`requests`, known whole before it runs) goes
/// to the protocol whole ([`Protocol::run_requests`]); any other runs through its procedure's
/// steps. The reads of a step are independent of each other, so while one is read the next
/// one's record is requested ([`Protocol::prefetch`]): its cache miss then overlaps this one's
/// instead of waiting behind it (2PL's lock is an atomic read-modify-write, which waits for
/// every earlier access to finish). Unlike `--prefetch on` it uses nothing the procedure has
/// not asked for yet, so it is always on. Writes are not requested ahead: most rewrite a
/// record just read, and asking again cost 4% of a ycsb transaction's instructions.
fn attempt<P: Protocol>(
    protocol: &P,
    worker: &mut P::Worker,
    workload: &dyn Workload,
    txn: &Txn,
    requests: Option<Requests<'_>>,
    exec: &mut Exec,
) -> Result<Outcome, Abort> {
    if let Some(requests) = requests {
        protocol.run_requests(worker, requests)?;
        return Ok(Outcome::Committed);
    }
    exec.values.clear();
    exec.writes.clear();
    loop {
        exec.reads.clear();
        match workload.step(txn, &exec.values, &mut exec.reads, &mut exec.writes) {
            Step::Read => {
                let written = if P::UPDATE_HINTS { workload.written_reads(txn, &exec.values) } else { Some(0) };
                for (i, &key) in exec.reads.iter().enumerate() {
                    if let Some(&next) = exec.reads.get(i + 1) {
                        protocol.prefetch(next);
                    }
                    let for_update = match written {
                        Some(mask) => mask.checked_shr(i as u32).unwrap_or(0) & 1 == 1,
                        None => exec.updates.may_contain(key) && exec.update_keys.contains(&key),
                    };
                    exec.values.push(protocol.read(worker, key, for_update)?);
                }
            }
            Step::Commit => {
                for &(key, value) in &exec.writes {
                    protocol.write(worker, key, value)?;
                }
                protocol.commit(worker)?;
                return Ok(Outcome::Committed);
            }
            Step::UserAbort => return Ok(Outcome::UserAbort),
        }
    }
}

/// One worker's state.
struct WorkerState<P: Protocol> {
    index: usize,
    protocol_state: P::Worker,
    rng: WorkloadRng,
    recorder: Recorder,
    exec: Exec,
    committed: u64,
    /// The transaction about to run had its footprint requested already.
    next_prefetched: bool,
    /// Transactions drawn before the run, replayed instead of drawing (`None`: draw each).
    pool: Option<TxnPool>,
}

impl<P: Protocol> WorkerState<P> {
    /// The worker's next transaction, into `txn`: the pool's next, or a fresh draw.
    #[inline]
    fn next_txn(&mut self, workload: &dyn Workload, txn: &mut Txn) {
        match &mut self.pool {
            Some(pool) => pool.next_into(txn),
            None => workload.generate(&mut self.rng, txn),
        }
    }

    /// Requests every record `txn` will touch, at once: the cache misses of a large table then
    /// overlap instead of stalling one after another.
    fn prefetch(&mut self, shared: &Shared<'_, P>, txn: &Txn) {
        let (reads, writes) = (&mut self.exec.prefetch_reads, &mut self.exec.prefetch_writes);
        reads.clear();
        writes.clear();
        shared.workload.footprint(txn, reads, writes);
        reads.iter().chain(writes.iter()).for_each(|&key| shared.protocol.prefetch(key));
    }

    /// Runs `txn`, which first started `first_start_us` into the run, until it commits or the
    /// procedure gives up (or the run is stopping), and returns when it ended, in microseconds
    /// into the run (the clock reading its commit was recorded with). With prefetching on,
    /// `next` (the transaction this worker runs after it, when known) has its footprint
    /// requested now, so its misses overlap with this transaction's work.
    fn run_transaction(&mut self, shared: &Shared<'_, P>, txn: &Txn, first_start_us: u64, next: Option<&Txn>) -> u64 {
        let protocol = shared.protocol;
        let requests = shared.workload.requests(txn);
        debug_assert!(requests.is_none_or(|r| r.well_formed()), "{requests:?}");
        // A workload that cannot say which reads it writes step by step (`written_reads`)
        // is asked for its whole footprint once.
        if P::UPDATE_HINTS && requests.is_none() && shared.workload.written_reads(txn, &[]).is_none() {
            self.exec.footprint_reads.clear();
            self.exec.update_keys.clear();
            shared.workload.footprint(txn, &mut self.exec.footprint_reads, &mut self.exec.update_keys);
            self.exec.updates.clear();
            self.exec.update_keys.iter().for_each(|&key| self.exec.updates.add(key));
        }
        if shared.prefetch {
            if !std::mem::take(&mut self.next_prefetched) {
                self.prefetch(shared, txn);
            }
            if let Some(next) = next {
                self.prefetch(shared, next);
                self.next_prefetched = true;
            }
        }
        let mut restarts = 0u32;
        loop {
            protocol.begin(&mut self.protocol_state, restarts > 0);
            match attempt(protocol, &mut self.protocol_state, shared.workload, txn, requests, &mut self.exec) {
                Ok(Outcome::Committed) => {
                    // One clock read serves the window and the latency.
                    let now = shared.clock.now_us();
                    self.recorder.commit(now, now.saturating_sub(first_start_us), restarts, txn.procedure);
                    self.committed += 1;
                    shared.commits[self.index].store(self.committed, Ordering::Relaxed);
                    return now;
                }
                Ok(Outcome::UserAbort) => {
                    protocol.abort(&mut self.protocol_state);
                    let now = shared.clock.now_us();
                    self.recorder.user_abort(now);
                    return now;
                }
                Err(Abort(cause)) => {
                    protocol.abort(&mut self.protocol_state);
                    let now = shared.clock.now_us();
                    self.recorder.abort(now, cause);
                    restarts += 1;
                    if shared.stop.load(Ordering::Relaxed) {
                        return now;
                    }
                    crate::protocol::back_off(restarts, &mut self.rng);
                }
            }
        }
    }
}

fn worker<P: Protocol>(shared: &Shared<'_, P>, index: usize, pool: Option<TxnPool>) -> (Recorder, Vec<HistoryEntry>) {
    let seed = shared.spec.seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut state = WorkerState::<P> {
        index,
        protocol_state: shared.protocol.worker(index, shared.spec.record_history),
        rng: rng_from_seed(seed),
        recorder: Recorder::new(shared.window),
        exec: Exec::default(),
        committed: 0,
        next_prefetched: false,
        pool,
    };
    batch_front::work(&mut FlatWorker { shared, state: &mut state }, shared.batch.as_ref());
    let history = std::mem::take(P::history(&mut state.protocol_state));
    (state.recorder, history)
}

/// A flat-store worker as the batching front sees it.
struct FlatWorker<'s, 'a, P: Protocol> {
    shared: &'s Shared<'a, P>,
    state: &'s mut WorkerState<P>,
}

impl<P: Protocol> ShareWorker for FlatWorker<'_, '_, P> {
    fn index(&self) -> usize {
        self.state.index
    }

    fn stopping(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    fn generate(&mut self, _slot: usize, txn: &mut Txn) {
        self.state.next_txn(self.shared.workload, txn);
    }

    fn footprint(&self, txn: &Txn, reads: &mut Vec<u64>, writes: &mut Vec<u64>) {
        self.shared.workload.footprint(txn, reads, writes);
    }

    fn now_us(&self) -> u64 {
        self.shared.clock.now_us()
    }

    fn run(&mut self, txn: &Txn, entered_us: u64, next: Option<&Txn>) -> u64 {
        self.state.run_transaction(self.shared, txn, entered_us, next)
    }

    fn built(&mut self, size: usize, took: Duration) {
        let now = self.shared.clock.now_us();
        self.state.recorder.batch(now, size, 0, took.as_nanos() as u64);
    }

    fn take_pool(&mut self) -> Option<TxnPool> {
        self.state.pool.take()
    }
}

#[cfg(test)]
mod tests {
    use ordo_workload::{WriteKind, Ycsb, YcsbConfig};

    use super::*;
    use crate::mvcc::VERSIONS_DEFAULT;

    /// Runs `count` transactions of `workload` alone on `protocol`'s fresh store, each as its
    /// requests (`one_shot`) or through its procedure's steps, recording the history when
    /// `record`; returns the final values and the recorded history.
    fn alone<P: Protocol>(
        protocol: &P,
        workload: &dyn Workload,
        one_shot: bool,
        record: bool,
        count: usize,
    ) -> (Vec<Value>, Vec<HistoryEntry>) {
        let mut worker = protocol.worker(0, record);
        let (mut rng, mut txn, mut exec) = (rng_from_seed(5), Txn::default(), Exec::default());
        for i in 0..count {
            workload.generate(&mut rng, &mut txn);
            protocol.begin(&mut worker, false);
            let requests = if one_shot { Some(workload.requests(&txn).expect("a one-shot workload")) } else { None };
            let outcome = attempt(protocol, &mut worker, workload, &txn, requests, &mut exec);
            assert!(
                matches!(outcome, Ok(Outcome::Committed)),
                "{}: transaction {i} alone did not commit",
                protocol.name()
            );
        }
        let values = (0..workload.key_count()).map(|key| protocol.committed_value(key)).collect();
        (values, std::mem::take(P::history(&mut worker)))
    }

    /// The two ways must leave the same store and record the same history, transaction by
    /// transaction (`make` builds a fresh store for each); the one-shot way without a history
    /// (a protocol may run it as a loop of its own) must leave the same store too.
    fn both_ways_agree<P: Protocol>(make: impl Fn() -> P, workload: &dyn Workload, initial: &[Value]) {
        let (one_shot, steps, unrecorded) = (make(), make(), make());
        let name = one_shot.name();
        let (values, history) = alone(&one_shot, workload, true, true, 400);
        let (step_values, step_history) = alone(&steps, workload, false, true, 400);
        let (unrecorded_values, no_history) = alone(&unrecorded, workload, true, false, 400);
        assert_eq!(values, step_values, "{name}: the one-shot way left another store");
        assert_eq!(history, step_history, "{name}: the one-shot way recorded another history");
        assert_eq!(unrecorded_values, values, "{name}: the one-shot way without a history left another store");
        assert!(no_history.is_empty(), "{name}: a history was recorded without being asked for");
        assert_ne!(values, initial, "{name}: nothing was written");
        assert_eq!(history.len(), 400, "{name}: one history entry per commit");
    }

    #[test]
    fn a_one_shot_transaction_runs_as_its_procedure_would() {
        for write_kind in [WriteKind::Rmw, WriteKind::Blind] {
            let ycsb = Ycsb::new(YcsbConfig {
                records: 300,
                theta: 0.9,
                write_kind,
                payload_bytes: 24,
                ..YcsbConfig::default()
            })
            .unwrap();
            let params =
                StoreParams { workload: &ycsb, payload_bytes: 24, versions: VERSIONS_DEFAULT, load_threads: 1 };
            let initial: Vec<Value> = (0..ycsb.key_count()).map(|key| ycsb.initial_value(key)).collect();
            both_ways_agree(|| params.silo(), &ycsb, &initial);
            both_ways_agree(|| params.tictoc(), &ycsb, &initial);
            both_ways_agree(|| params.two_phase(Deadlock::NoWait), &ycsb, &initial);
            both_ways_agree(|| params.two_phase(Deadlock::WaitDie), &ycsb, &initial);
            both_ways_agree(|| params.mvcc(Isolation::Snapshot), &ycsb, &initial);
            both_ways_agree(|| params.mvcc(Isolation::SerialSafetyNet), &ycsb, &initial);
            both_ways_agree(|| params.serial(), &ycsb, &initial);
        }
    }
}
