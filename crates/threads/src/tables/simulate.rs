//! The seeded interleaving simulator: runs any [`TableProtocol`] with several workers on real
//! threads of which exactly one runs at a time, and checks what the run committed. One `u64`
//! seed fixes everything: the database and the transactions (a few hot keys, inserts, deletes,
//! point reads of present and absent keys, scans both ways with limits, a secondary index), and
//! the schedule (which worker takes the next step at every yield point, when the global epoch
//! advances, and so when the protocol may reclaim, and when retired slots are recycled). The
//! same seed replays the same run, step for step. This is TigerBeetle's VOPR for protocols.
//!
//! ```text
//!   seed ─┬─ shape, initial rows, transactions per worker        (workload stream)
//!         └─ per step: advance the epoch? recycle slots? which worker runs next?   (schedule stream)
//!
//!   driver (this thread)                     worker w (one thread each, one at a time)
//!     loop: pick w ── resume(w) ──────────>    begin ─ get/put/insert/delete/scan ─ commit, retry on abort
//!           <── w reached a yield point ──       yield points: around every Tx call (Recorded), at begin
//!                                                and commit, inside the protocol's commit, in every wait
//!   after the run: quiesce; then the oracles
//!     1. every committed transaction is in the history, under the id its worker's trace gives it
//!     2. serializable protocols: ordo_history::check passes (phantoms are cycles through scans);
//!        mvcc_si: ordo_history::check_snapshot_isolation passes (every cycle has two rw in a row)
//!     3. serializable protocols: a serial order of the committed transactions reproduces every
//!        answer each of them got and leaves exactly the engine's tables (replay)
//!     4. the workload's invariants hold (sum, rows intact, index = rows; group cap when serializable)
//!     5. liveness: no transaction restarts more than RESTARTS_MAX times, no run exceeds STEPS_MAX
//!        steps, no worker panics (a protocol's assertion)
//! ```
//!
//! The schedule's knobs are themselves drawn from the seed, so seeds differ in kind as well as
//! in detail: how often the running worker keeps the turn (fine-grained interleaving to long
//! solo stretches), how often the epoch moves, how often retired slots are recycled.
//! Protocols that are not concurrent (`serial`) run one worker.
//!
//! A failure is a [`SimFailure`]: the seed, what broke, and the run's events (begins, commits,
//! aborts, epoch moves) leading to it. Tests print the command that replays it.

mod replay;
mod turns;
mod workload;

use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use ordo_history::{CheckReport, HistoryEntry};
use ordo_workload::{Aborted, Maintained, Outcome, Scratch, TableWorkload, Txn, WorkloadRng, rng_from_seed};
use rand::Rng;

pub use replay::{CommittedTxn, Observed, PLACEMENTS_MAX, Recorded, ReplayFailure, serial_replay};
pub use turns::{Seat, Stop, TURN_S_MAX, Turns};
pub use workload::{GROUPS_MAX, ITEMS, ITEMS_BY_GROUP, KEYS_MAX, SimShape, SimWorkload};

use super::driver;
use super::epoch::Epochs;
use super::protocol::{TableProtocol, WorkerOptions};
use crate::interleave;

/// Most restarts of one transaction before the run counts as a livelock.
pub const RESTARTS_MAX: u32 = 1_000;
/// Most scheduling steps of one run before it counts as stuck.
pub const STEPS_MAX: u64 = 2_000_000;
/// Most workers of a run.
pub const WORKERS_MAX: usize = 4;
/// Most transactions per worker.
pub const TRANSACTIONS_PER_WORKER_MAX: usize = 10;
/// Events kept for a failure's report (the last ones).
pub const EVENTS_SHOWN_MAX: usize = 60;

/// What a run did, when every oracle passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimReport {
    pub seed: u64,
    pub workers: usize,
    pub shape: SimShape,
    pub transactions: usize,
    pub commits: usize,
    /// Aborted attempts (each retried).
    pub aborts: usize,
    /// Transactions whose procedure rolled itself back.
    pub user_aborts: usize,
    /// Scheduling steps (turns given).
    pub steps: u64,
    pub epochs_advanced: u64,
    /// The history check's report: serializability, or snapshot isolation for `mvcc_si`.
    pub check: CheckReport,
    /// Placements the replay search made (`commits` when it never backtracked).
    pub placements: usize,
    /// A hash of every scheduling decision, event, history entry and final row: two runs of one
    /// seed have the same.
    pub fingerprint: u64,
}

/// A run that broke an oracle.
#[derive(Debug, Clone)]
pub struct SimFailure {
    pub seed: u64,
    /// Which oracle.
    pub oracle: &'static str,
    pub detail: String,
    /// The run's events, oldest first (the last [`EVENTS_SHOWN_MAX`]).
    pub events: Vec<String>,
}

impl fmt::Display for SimFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {}: {} failed: {}", self.seed, self.oracle, self.detail)?;
        if !self.events.is_empty() {
            writeln!(f, "  last events of the run:")?;
            for event in &self.events {
                writeln!(f, "    {event}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for SimFailure {}

/// One thing that happened in a run, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Event {
    Begin { worker: usize, txn: usize, restarts: u32 },
    Commit { worker: usize, txn: usize, id: u64 },
    Abort { worker: usize, txn: usize, at_commit: bool },
    UserAbort { worker: usize, txn: usize },
    Epoch(u64),
    Recycle,
}

/// The schedule's knobs, drawn from the seed.
#[derive(Debug, Clone, Copy)]
struct Knobs {
    /// Chance that the running worker keeps the turn.
    stay: f64,
    /// Chance per step that the epoch advances.
    epoch: f64,
    /// Chance per step that retired slots are recycled.
    recycle: f64,
}

impl Knobs {
    fn draw(rng: &mut WorkloadRng) -> Self {
        const STAY: [f64; 4] = [0.0, 0.5, 0.8, 0.95];
        const EPOCH: [f64; 3] = [0.002, 0.02, 0.1];
        const RECYCLE: [f64; 3] = [0.0, 0.01, 0.05];
        Knobs {
            stay: STAY[rng.random_range(0..STAY.len())],
            epoch: EPOCH[rng.random_range(0..EPOCH.len())],
            recycle: RECYCLE[rng.random_range(0..RECYCLE.len())],
        }
    }
}

/// What one seed fixes before anything runs: the database, the transactions and the
/// schedule's knobs (the schedule's own draws come from `schedule_rng` as the run goes).
struct Plan {
    workload: SimWorkload,
    /// Each worker's transactions, in order.
    txns: Vec<Vec<Txn>>,
    knobs: Knobs,
    schedule_rng: WorkloadRng,
}

impl Plan {
    fn draw(seed: u64, concurrent: bool) -> Self {
        let mut workload_rng = rng_from_seed(seed);
        let mut schedule_rng = rng_from_seed(seed ^ 0x5ced_u64.rotate_left(40));
        let workload = SimWorkload::new(SimShape::draw(&mut workload_rng), &mut workload_rng);
        let workers = if concurrent { workload_rng.random_range(2..=WORKERS_MAX) } else { 1 };
        let per_worker = workload_rng.random_range(3..=TRANSACTIONS_PER_WORKER_MAX);
        let txns = (0..workers)
            .map(|worker| {
                (0..per_worker)
                    .map(|_| {
                        let mut txn = Txn::default();
                        workload.generate(&mut workload_rng, worker, &mut txn);
                        txn
                    })
                    .collect()
            })
            .collect();
        let knobs = Knobs::draw(&mut schedule_rng);
        Plan { workload, txns, knobs, schedule_rng }
    }
}

/// What the workers share.
struct Shared<'a, P> {
    protocol: &'a P,
    workload: &'a SimWorkload,
    workers: usize,
    events: Mutex<Vec<Event>>,
    commits: AtomicU64,
}

impl<P> Shared<'_, P> {
    fn event(&self, event: Event) {
        self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(event);
    }
}

/// What one worker brings back.
struct WorkerRun<W> {
    state: W,
    /// Its commits, each with its place in the run's commit order.
    committed: Vec<(u64, CommittedTxn)>,
    aborts: usize,
    user_aborts: usize,
    livelock: Option<String>,
}

/// A finished run, before the oracles look at it.
struct Run<W> {
    workers: Vec<WorkerRun<W>>,
    events: Vec<Event>,
    steps: u64,
    epochs_advanced: u64,
    fingerprint: DefaultHasher,
}

/// Runs the simulation of `seed` on the protocol `build` makes (from the workload to load and a
/// manual epoch), and checks it.
pub fn simulate<P: TableProtocol>(
    seed: u64,
    build: impl FnOnce(&dyn TableWorkload, Epochs) -> P,
) -> Result<SimReport, SimFailure> {
    let mut plan = Plan::draw(seed, P::CONCURRENT);
    let protocol = build(&plan.workload, Epochs::manual());
    plan.workload.check_cap = protocol.kind().serializable();
    let run = drive(seed, &protocol, &mut plan)?;
    judge(seed, &protocol, &plan, run)
}

fn failure(seed: u64, oracle: &'static str, detail: String, events: &[Event]) -> SimFailure {
    let shown = &events[events.len().saturating_sub(EVENTS_SHOWN_MAX)..];
    SimFailure { seed, oracle, detail, events: shown.iter().map(|event| format!("{event:?}")).collect() }
}

/// Hands out turns until every worker is done: each step may advance the epoch and recycle
/// retired slots, then gives the turn to the running worker again or to another.
fn drive<P: TableProtocol>(seed: u64, protocol: &P, plan: &mut Plan) -> Result<Run<P::Worker>, SimFailure> {
    let workers = plan.txns.len();
    let shared =
        Shared { protocol, workload: &plan.workload, workers, events: Mutex::default(), commits: AtomicU64::new(0) };
    let (knobs, rng) = (plan.knobs, &mut plan.schedule_rng);
    let turns = Turns::new(workers);
    let (mut steps, mut epochs_advanced, mut fingerprint) = (0u64, 0u64, DefaultHasher::new());
    let (runs, stopped) = std::thread::scope(|scope| {
        let handles: Vec<_> = plan
            .txns
            .iter()
            .enumerate()
            .map(|(worker, txns)| {
                let shared = &shared;
                turns.spawn(scope, worker, move |_| run_worker(shared, worker, txns))
            })
            .collect();
        let mut current = None;
        let mut stopped = None;
        loop {
            let runnable: Vec<usize> = (0..workers).filter(|&w| !turns.finished(w)).collect();
            if runnable.is_empty() {
                break;
            }
            if steps >= STEPS_MAX {
                stopped = Some(("liveness", format!("{STEPS_MAX} steps and workers {runnable:?} still running")));
                turns.abandon();
                break;
            }
            steps += 1;
            if rng.random_bool(knobs.epoch) {
                let epoch = protocol.database().epochs().advance();
                epochs_advanced += 1;
                shared.event(Event::Epoch(epoch));
            }
            if rng.random_bool(knobs.recycle) {
                ordo_storage::epoch::flush();
                shared.event(Event::Recycle);
            }
            let next = match current {
                Some(w) if runnable.contains(&w) && rng.random_bool(knobs.stay) => w,
                _ => runnable[rng.random_range(0..runnable.len())],
            };
            current = Some(next);
            let stop = turns.resume(next);
            (next, &stop).hash(&mut fingerprint);
            if let Stop::Finished(Err(message)) = stop {
                stopped = Some(("panic", format!("worker {next} panicked: {message}")));
                turns.abandon();
                break;
            }
        }
        let runs: Vec<Option<WorkerRun<P::Worker>>> =
            handles.into_iter().map(|h| h.join().expect("a simulated worker thread")).collect();
        (runs, stopped)
    });
    let events = shared.events.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((oracle, detail)) = stopped {
        return Err(failure(seed, oracle, detail, &events));
    }
    let workers: Vec<WorkerRun<P::Worker>> = runs.into_iter().map(|run| run.expect("a worker that finished")).collect();
    if let Some(detail) = workers.iter().find_map(|run| run.livelock.clone()) {
        return Err(failure(seed, "liveness", detail, &events));
    }
    Ok(Run { workers, events, steps, epochs_advanced, fingerprint })
}

/// The oracles, over a finished run.
fn judge<P: TableProtocol>(
    seed: u64,
    protocol: &P,
    plan: &Plan,
    mut run: Run<P::Worker>,
) -> Result<SimReport, SimFailure> {
    let workload = &plan.workload;
    let fail = |oracle: &'static str, detail: String| failure(seed, oracle, detail, &run.events);
    // Oracle 1: every commit is in the history, under its id.
    let mut history: Vec<HistoryEntry> = Vec::new();
    let mut committed: Vec<(u64, CommittedTxn)> = Vec::new();
    for worker in &mut run.workers {
        protocol.quiesce(&mut worker.state);
        history.append(P::history(&mut worker.state));
        committed.append(&mut worker.committed);
    }
    history.sort_unstable_by_key(|entry| entry.id);
    committed.sort_unstable_by_key(|&(sequence, _)| sequence);
    let committed: Vec<CommittedTxn> = committed.into_iter().map(|(_, txn)| txn).collect();
    let mut ids: Vec<u64> = committed.iter().map(|txn| txn.id).collect();
    ids.sort_unstable();
    let history_ids: Vec<u64> = history.iter().map(|entry| entry.id).collect();
    if ids != history_ids {
        return Err(fail("history", format!("committed transactions {ids:?}, history entries {history_ids:?}")));
    }

    // Oracles 2 and 3: serializability, by the checker and by replay (snapshot isolation, by
    // the checker alone: no serial order need exist).
    let mut placements = 0;
    let check = if protocol.kind().serializable() {
        let report = ordo_history::check(&history).map_err(|violation| {
            fail("history check", format!("{violation}\n  history:\n{}", show_history(&history)))
        })?;
        let (order, model) = serial_replay(workload, &history, &committed).map_err(|failure| {
            let detail = format!(
                "no serial order reproduces the run; deepest order {:?}: {}\n  history:\n{}",
                failure.placed,
                failure.detail,
                show_history(&history)
            );
            fail("replay", detail)
        })?;
        placements = order.len();
        for (table, schema) in (0..).zip(workload.schema().tables()) {
            let (engine, serial) = (protocol.database().rows(table), model.table(table));
            if engine != *serial {
                let detail = format!(
                    "table {}: the engine holds {engine:?}, serial order {order:?} gives {serial:?}",
                    schema.name
                );
                return Err(fail("final state", detail));
            }
        }
        report
    } else {
        ordo_history::check_snapshot_isolation(&history).map_err(|violation| {
            fail(
                "history check",
                format!("not snapshot isolation: {violation}\n  history:\n{}", show_history(&history)),
            )
        })?
    };

    // Oracle 4: the workload's invariants, read by a worker of its own once the run's workers
    // are gone (a protocol may give each worker index one live state at a time).
    let aborts = run.workers.iter().map(|worker| worker.aborts).sum();
    let user_aborts = run.workers.iter().map(|worker| worker.user_aborts).sum();
    run.workers.clear();
    driver::check(protocol, workload).map_err(|error| fail("invariants", error.to_string()))?;

    let mut fingerprint = run.fingerprint;
    run.events.hash(&mut fingerprint);
    format!("{history:?}").hash(&mut fingerprint);
    for table in (0..).take(workload.schema().tables().len()) {
        protocol.database().rows(table).hash(&mut fingerprint);
    }
    Ok(SimReport {
        seed,
        workers: plan.txns.len(),
        shape: workload.shape(),
        transactions: plan.txns.iter().map(Vec::len).sum(),
        commits: committed.len(),
        aborts,
        user_aborts,
        steps: run.steps,
        epochs_advanced: run.epochs_advanced,
        check,
        placements,
        fingerprint: fingerprint.finish(),
    })
}

/// One worker: runs its transactions in order, each until it commits or rolls itself back.
fn run_worker<P: TableProtocol>(shared: &Shared<'_, P>, worker: usize, txns: &[Txn]) -> WorkerRun<P::Worker> {
    let protocol = shared.protocol;
    let workload = shared.workload;
    let mut state = protocol.worker(WorkerOptions { index: worker, workers: shared.workers, record_history: true });
    let (mut committed, mut aborts, mut user_aborts, mut livelock) = (Vec::new(), 0, 0, None);
    let (mut scratch, mut row) = (Scratch::default(), Vec::new());
    // The trace numbers a worker's commits `worker + 1`, then every `workers` after.
    let mut next_id = worker as u64 + 1;
    'txns: for (index, txn) in txns.iter().enumerate() {
        let mut restarts = 0;
        loop {
            shared.event(Event::Begin { worker, txn: index, restarts });
            interleave::point();
            let mut attempt = Recorded::new(protocol.begin(&mut state, restarts > 0));
            let outcome =
                workload.run(txn, &mut Maintained::new(workload.schema(), &mut attempt, &mut row), &mut scratch);
            let (attempt, observed) = attempt.into_parts();
            let at_commit = match outcome {
                Ok(Outcome::Commit) => {
                    interleave::point();
                    if P::commit(attempt).is_ok() {
                        let sequence = shared.commits.fetch_add(1, Ordering::Relaxed);
                        shared.event(Event::Commit { worker, txn: index, id: next_id });
                        committed.push((sequence, CommittedTxn { id: next_id, worker, txn: txn.clone(), observed }));
                        next_id += shared.workers as u64;
                        continue 'txns;
                    }
                    true
                }
                Ok(Outcome::UserAbort) => {
                    P::abort(attempt);
                    shared.event(Event::UserAbort { worker, txn: index });
                    user_aborts += 1;
                    continue 'txns;
                }
                Err(Aborted) => {
                    P::abort(attempt);
                    false
                }
            };
            shared.event(Event::Abort { worker, txn: index, at_commit });
            aborts += 1;
            restarts += 1;
            if restarts > RESTARTS_MAX {
                livelock =
                    Some(format!("worker {worker}'s transaction {index} ({txn:?}) restarted {RESTARTS_MAX} times"));
                break 'txns;
            }
        }
    }
    WorkerRun { state, committed, aborts, user_aborts, livelock }
}

/// The history, one entry per line, for failure reports.
fn show_history(history: &[HistoryEntry]) -> String {
    history.iter().map(|entry| format!("    {entry:?}")).collect::<Vec<_>>().join("\n")
}
