//! The driver: one tokio runtime (current-thread: PostgreSQL needs the cores more than ordo),
//! N connections, one of the three modes, retries, in-doubt resolution and the audit.
//!
//! ```text
//!  nobatch : N workers ── each: generate ─> attempt ─(40001/40P01)─> attempt ... ─> report
//!  batch   : loop { retries + fresh up to B ─> Dispatcher ─> N queues (pipelined) ─> join }
//!  reorder : same, and the Dispatcher defers the batch's FVS to the next batch and groups
//!            conflicting transactions on one connection
//!  grouped : each connection runs its queue in groups of up to G (one server transaction
//!            each, see `group`); a group rolled back by 40001/40P01 sends every member back
//!            to the intake, each counting a failed attempt
//! ```
//!
//! **Adaptive sizes.** The batch size and the group size are [`BatchSize`] knobs, `auto` by
//! default: a [`Tuner`] (ordo-batching) running beside the progress ticker closes a window every
//! `tuning.window_us` (once it holds `tuning.window_commits_min` commits), feeds it the tier's
//! commits, failed attempts and mean latency, and sets the sizes the batcher, the planner and
//! the connections read for their next batch, queue split and chunk ([`LiveSizes`]).
//!
//! Every transaction gets an id `run_id << 32 | n`. A connection that breaks leaves its
//! in-flight transactions in doubt; the driver reconnects, waits until the old backend has
//! exited, and looks each id up in `ordo_txn` (written by the transaction itself): found means
//! committed (with the net it recorded), absent means rolled back, and only then is it retried.
//! So each transaction is reported exactly once, and after the run the bank's total equals the
//! loaded total plus the net of the committed transactions ordo reported.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use foldhash::HashMap;
use futures_util::StreamExt;
use futures_util::future::try_join_all;
use ordo_batching::{BatchSize, ControllerConfig, Knob, Tuner};
use ordo_harness::{AbortCause, BatchSizeSample, Recorder, Window};
use ordo_reorder::{FvsConfig, TxnFootprint};
use ordo_workload::smallbank::BALANCE;
use ordo_workload::{Txn, Workload, WorkloadRng, rng_from_seed};
use tokio::sync::Notify;

use crate::attempt::{self, Attempt, Procedures};
use crate::connection::{Conn, Failure, SessionConfig, connect_plain, redact};
use crate::dispatch::{BatchPlan, Busy, Dispatcher, Mode, Pin, Placement};
use crate::error::{PgError, Result};
use crate::group::{self, Decided, GroupForm, GroupRetry, Member};
use crate::schema;
use crate::tuning::{LiveSizes, TierTuner, WindowCounts};

/// Pipelined requests per connection in batch and reorder modes (functions only).
pub const PIPELINE_DEPTH_DEFAULT: usize = 8;
/// Transactions per server transaction in batch and reorder modes (see `group`), where an
/// `auto` group size starts: at least the starting batch, so each batch's queue begins as one
/// server transaction, the fastest fixed setting at every connection count measured on this
/// machine (BENCHMARKS.md, "`auto` batch and group sizes against fixed ones"); the controller
/// moves it down where smaller groups run faster.
pub const GROUP_MAX_DEFAULT: usize = 64;
/// `deadlock_timeout` of the tier's sessions: waits on row locks under SERIALIZABLE are short
/// (the holder commits and the waiter fails with 40001) unless two transactions wait on each
/// other, and a group holds more locks for longer, so a deadlock is found after this long
/// instead of the server's default second.
pub const DEADLOCK_TIMEOUT_MS_DEFAULT: u64 = 20;
/// The largest group accepted.
pub const GROUP_MAX_LIMIT: usize = 1000;
/// Transactions per batch, the top of an `auto` batch size's search and where it starts from 16
/// connections up (the closed-loop clients of an `auto` batch are twice this). In grids of
/// fixed batch and group sizes, batches of 100 (groups of 64) were the best fixed cell at 32
/// connections and 0-11% below the best at 4 and 16, where batches of 50 fell up to 21% behind
/// at 32 (BENCHMARKS.md, "`auto` batch and group sizes against fixed ones").
pub const BATCH_SIZE_DEFAULT: usize = 100;
/// Where an `auto` batch starts on one connection; on `C` connections it starts at this times
/// the square root of `C`, up to [`BATCH_SIZE_DEFAULT`] (see
/// [`TierTuning::batch_initial_from_connections`]).
pub const BATCH_INITIAL_ONE_CONNECTION: f64 = 25.0;
/// Rolling dispatch: the longest a partial batch waits for more transactions (µs).
pub const BATCH_WAIT_US_DEFAULT: u64 = 1000;
/// Connections.
pub const CONNECTIONS_DEFAULT: usize = 16;
/// How long a broken connection may take to come back before the run fails.
pub const RECONNECT_TIMEOUT_MS_DEFAULT: u64 = 30_000;
/// How often the progress callback is called.
const PROGRESS_US: u64 = 200_000;
/// Attempts of one transaction before it is reported failed.
pub const ATTEMPTS_MAX: u32 = 10_000;
/// After the run, how long retries may take to settle before they are reported failed.
pub const DRAIN_MS_MAX: u64 = 10_000;
/// Most connections (PostgreSQL's own `max_connections` is usually lower; the run checks it).
pub const CONNECTIONS_MAX: usize = 1000;
/// Largest batch, and most closed-loop clients of the rolling tier.
pub const BATCH_SIZE_MAX: usize = 100_000;
/// Most requests in flight per connection.
pub const PIPELINE_DEPTH_MAX: usize = 1024;
/// Longest a partial batch may wait (µs): one second.
pub const BATCH_WAIT_US_MAX: u64 = 1_000_000;
/// Longest a broken connection may take to come back (ms): one hour.
pub const RECONNECT_TIMEOUT_MS_MAX: u64 = 3_600_000;
/// Longest `deadlock_timeout` the tier sets (ms): one minute.
pub const DEADLOCK_TIMEOUT_MS_MAX: u64 = 60_000;

/// Everything that defines a tier run but the timing.
#[derive(Debug, Clone)]
pub struct TierConfig {
    pub session: SessionConfig,
    pub mode: Mode,
    pub connections: usize,
    /// Transactions per batch (batch and reorder).
    pub batch_size: BatchSize,
    /// Requests in flight per connection (1 = no pipelining). Statements always use 1.
    pub pipeline_depth: usize,
    pub procedures: Procedures,
    pub reorder: FvsConfig,
    pub reconnect_timeout_ms: u64,
    /// Empty the tables and load the workload's bank before running.
    pub load: bool,
    /// How batch and reorder modes feed the connections.
    pub dispatch: Dispatch,
    /// Rolling dispatch: a partial batch goes out once its oldest transaction waited this long.
    pub batch_wait_us_max: u64,
    /// Rolling dispatch: closed-loop clients, each with one transaction in the tier (`None`:
    /// twice the batch size).
    pub clients: Option<usize>,
    /// Rolling dispatch in reorder mode: send a planned queue to the connection already running
    /// transactions that write the same keys (off: to the shortest backlog).
    pub affinity: bool,
    /// Affinity prefers a connection only while fewer than this many transactions are queued or
    /// running there (`None`: no bound).
    pub affinity_backlog_max: Option<usize>,
    /// How reorder mode places a batch on the connections (`dispatch` module docs).
    pub placement: Placement,
    /// Transactions per server transaction (1: each its own, as in nobatch); batch and reorder
    /// with functions only (elsewhere it is 1 whatever this says, `auto` included).
    pub group_max: BatchSize,
    pub group_form: GroupForm,
    /// How large a group the members of a rolled-back group may join on retry.
    pub group_retry: GroupRetry,
    /// How the `auto` sizes are searched.
    pub tuning: TierTuning,
}

/// How the tier's `auto` knobs are searched: the measurement window, and the bounds and search
/// of the batch size and the group size.
#[derive(Debug, Clone, PartialEq)]
pub struct TierTuning {
    /// Shortest measurement window.
    pub window_us: u64,
    /// A window goes on past `window_us` until it holds this many commits, up to
    /// `window_us_max`.
    pub window_commits_min: u64,
    /// Longest measurement window.
    pub window_us_max: u64,
    /// The batch size's search (its maximum is clamped to the closed-loop clients, who are all
    /// a batch can hold).
    pub batch: ControllerConfig,
    /// Whether an `auto` batch starts at [`BATCH_INITIAL_ONE_CONNECTION`] times the square root
    /// of the connections (the default), within `batch`'s bounds, rather than at
    /// `batch.batch_size_initial`. A batch's queues run on the connections at once, so more
    /// connections can use larger batches, and the best fixed batch measured grew more slowly
    /// than the connections: 25-50 at 4 connections (the AMD and Intel hosts), 50-100 at 16,
    /// 100 at 32. A search that starts within a step of that best stays there, since the
    /// server's windows are too noisy to show the few percent between neighbouring sizes
    /// ("`auto` batch and group sizes against fixed ones" in BENCHMARKS.md: at 4 connections,
    /// started at 100 the search kept batches of 67-100 and ran at 0.954-0.967x fixed batches
    /// of 50 per round; started at 50 it kept 50 and ran at 0.994x).
    pub batch_initial_from_connections: bool,
    /// The group size's search.
    pub group: ControllerConfig,
    /// Most entries of the recorded size history.
    pub history_len_max: usize,
}

impl Default for TierTuning {
    fn default() -> Self {
        TierTuning {
            window_us: 150_000,
            window_commits_min: 2_000,
            window_us_max: 2_000_000,
            batch: noisy_windows(ControllerConfig::with_bounds(
                8,
                BATCH_SIZE_DEFAULT as u32,
                BATCH_SIZE_DEFAULT as u32,
            )),
            batch_initial_from_connections: true,
            group: noisy_windows(ControllerConfig::with_bounds(1, GROUP_MAX_DEFAULT as u32, 128)),
            history_len_max: 256,
        }
    }
}

/// A search for the server's noisy windows: a side must beat the centre by one and a half
/// times the spread of the round's own windows (at least the fixed tolerance), and every round
/// runs all its windows, since one window an arm says nothing about that spread (the batching
/// crate's essay, "Noisy windows").
fn noisy_windows(mut config: ControllerConfig) -> ControllerConfig {
    config.spread_tolerance_factor = Some(1.5);
    config.early_decision_ratio = None;
    config
}

/// The tier's knobs in a [`Tuner`] and in results.
pub const KNOB_BATCH: &str = "batch";
pub const KNOB_GROUP: &str = "group";

/// How the middle tier feeds its connections in batch and reorder modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dispatch {
    /// Send a batch, wait for all of it, then form the next.
    Barrier,
    /// Keep every connection's queue fed: a batch goes out when B transactions wait (or the
    /// oldest waited `batch_wait_us_max`), while earlier batches still run.
    Rolling,
}

named!(Dispatch { Barrier => "barrier", Rolling => "rolling" });

impl TierConfig {
    /// The tier's defaults on `session`: reorder over 16 connections, rolling dispatch with
    /// affinity, placement by conflict components, `auto` batch and group sizes (starting at
    /// batches of 100 on 16 connections, fewer on fewer, and groups of 64).
    pub fn new(session: SessionConfig) -> Self {
        TierConfig {
            session,
            mode: Mode::Reorder,
            connections: CONNECTIONS_DEFAULT,
            batch_size: BatchSize::Auto,
            pipeline_depth: PIPELINE_DEPTH_DEFAULT,
            procedures: Procedures::Functions,
            reorder: FvsConfig::default(),
            reconnect_timeout_ms: RECONNECT_TIMEOUT_MS_DEFAULT,
            load: true,
            dispatch: Dispatch::Rolling,
            batch_wait_us_max: BATCH_WAIT_US_DEFAULT,
            clients: None,
            affinity: true,
            affinity_backlog_max: None,
            placement: Placement::Components,
            group_max: BatchSize::Auto,
            group_form: GroupForm::Function,
            group_retry: GroupRetry::Halve,
            tuning: TierTuning::default(),
        }
    }

    pub fn validate(&self) -> Result<()> {
        let within = |field: &'static str, value: usize, max: usize| {
            if (1..=max).contains(&value) {
                Ok(())
            } else {
                Err(PgError::invalid(field, format!("{value}: must be between 1 and {max}")))
            }
        };
        within("connections", self.connections, CONNECTIONS_MAX)?;
        within("batch size", self.batch_size.get().map_or(1, |size| size as usize), BATCH_SIZE_MAX)?;
        within("clients", self.clients.unwrap_or(1), BATCH_SIZE_MAX)?;
        within("pipeline depth", self.pipeline_depth, PIPELINE_DEPTH_MAX)?;
        within("affinity backlog", self.affinity_backlog_max.unwrap_or(1), BATCH_SIZE_MAX)?;
        if self.batch_wait_us_max > BATCH_WAIT_US_MAX {
            return Err(PgError::invalid("batch wait", format!("at most {BATCH_WAIT_US_MAX} µs")));
        }
        if self.reconnect_timeout_ms > RECONNECT_TIMEOUT_MS_MAX {
            return Err(PgError::invalid("reconnect timeout", format!("at most {RECONNECT_TIMEOUT_MS_MAX} ms")));
        }
        if let Some(ms) = self.session.deadlock_timeout_ms
            && !(1..=DEADLOCK_TIMEOUT_MS_MAX).contains(&ms)
        {
            return Err(PgError::invalid(
                "deadlock timeout",
                format!("{ms} ms: must be between 1 and {DEADLOCK_TIMEOUT_MS_MAX}"),
            ));
        }
        if let Some(group) = self.group_max.get() {
            if group as usize > GROUP_MAX_LIMIT {
                return Err(PgError::invalid("group", format!("must be between 1 and {GROUP_MAX_LIMIT}")));
            }
            if group > 1 && self.mode == Mode::NoBatch {
                return Err(PgError::invalid(
                    "group",
                    "nobatch runs one transaction at a time by definition; grouping is for batch and reorder (use 1)",
                ));
            }
            if group > 1 && self.procedures == Procedures::Statements {
                return Err(PgError::invalid("group", "grouping needs --procedures functions (use 1 with statements)"));
            }
        }
        self.validate_tuning()?;
        self.reorder.validate().map_err(|e| PgError::invalid("reorder algorithm", e.to_string()))
    }

    fn validate_tuning(&self) -> Result<()> {
        let tuning = &self.tuning;
        if tuning.window_us == 0 || tuning.window_us > tuning.window_us_max || tuning.window_us_max > 60_000_000 {
            return Err(PgError::invalid("tuning window", "must satisfy 0 < window_us <= window_us_max <= 60 s"));
        }
        for (field, controller, limit) in
            [("tuning.batch", &tuning.batch, BATCH_SIZE_MAX), ("tuning.group", &tuning.group, GROUP_MAX_LIMIT)]
        {
            controller.validate().map_err(|e| PgError::invalid(field, e.to_string()))?;
            if controller.batch_size_max as usize > limit {
                return Err(PgError::invalid(field, format!("batch_size_max must be at most {limit}")));
            }
        }
        Tuner::new(&self.knobs(), tuning.history_len_max)
            .map(drop)
            .map_err(|e| PgError::invalid("tuning", e.to_string()))
    }

    /// Whether transactions can share a server transaction at all in this mode.
    fn can_group(&self) -> bool {
        self.mode != Mode::NoBatch && self.procedures == Procedures::Functions
    }

    /// The batch size the tier starts with: the fixed one, or where `auto` starts.
    pub fn initial_batch_size(&self) -> usize {
        self.batch_size.or(self.batch_controller().batch_size_initial) as usize
    }

    /// Closed-loop clients of the rolling tier: `clients`, or twice the batch size (for an
    /// `auto` batch size, twice `tuning.batch.batch_size_initial`, the top of the default
    /// search, whatever the connections; the search never exceeds them).
    pub fn effective_clients(&self) -> usize {
        self.clients.unwrap_or_else(|| 2 * self.batch_size.or(self.tuning.batch.batch_size_initial) as usize)
    }

    /// Transactions per server transaction the tier starts with: 1 where grouping is
    /// impossible (nobatch, statements), else the fixed size or where `auto` starts.
    pub fn effective_group_max(&self) -> usize {
        if self.can_group() { self.group_max.or(self.tuning.group.batch_size_initial) as usize } else { 1 }
    }

    fn batch_controller(&self) -> ControllerConfig {
        let bounds = &self.tuning.batch;
        let fillable = u32::try_from(self.effective_clients()).unwrap_or(u32::MAX);
        let max = fillable.clamp(bounds.batch_size_min, bounds.batch_size_max);
        let initial = if self.tuning.batch_initial_from_connections {
            // At most CONNECTIONS_MAX connections: the product is below 800 and exact enough.
            (BATCH_INITIAL_ONE_CONNECTION * (self.connections as f64).sqrt()).round() as u32
        } else {
            bounds.batch_size_initial
        };
        ControllerConfig {
            batch_size_max: max,
            batch_size_initial: initial.clamp(bounds.batch_size_min, max),
            ..bounds.clone()
        }
    }

    /// The tier's batching points as the tuner's knobs: the batch size in batch and reorder
    /// modes, the group size where transactions can be grouped.
    pub fn knobs(&self) -> Vec<Knob> {
        let mut knobs = Vec::new();
        if self.mode != Mode::NoBatch {
            knobs.push(Knob { name: KNOB_BATCH, setting: self.batch_size, controller: self.batch_controller() });
        }
        if self.can_group() {
            knobs.push(Knob { name: KNOB_GROUP, setting: self.group_max, controller: self.tuning.group.clone() });
        }
        knobs
    }

    /// The pipeline depth actually used.
    pub fn effective_pipeline_depth(&self) -> usize {
        match (self.mode, self.procedures) {
            (Mode::NoBatch, _) | (_, Procedures::Statements) => 1,
            _ => self.pipeline_depth,
        }
    }
}

/// Timing of one run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub seed: u64,
    pub warmup: Duration,
    pub duration: Duration,
    pub cooldown: Duration,
    /// Keep every transaction's outcome (tests).
    pub record_ledger: bool,
}

/// How a transaction ended (each is reported exactly once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Committed {
        net_cents: i64,
    },
    UserAbort,
    /// Gave up (too many attempts, or still deferred when the drain ended): nothing written.
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerEntry {
    pub txn_id: i64,
    pub procedure: u8,
    pub restarts: u32,
    pub outcome: Outcome,
}

/// What a run measured and what it checked.
#[derive(Debug)]
pub struct TierReport {
    pub recorder: Recorder,
    pub measured_s: f64,
    pub run_id: i64,
    /// Over the whole run (warm-up, cool-down and drain included).
    pub committed: u64,
    pub committed_writers: u64,
    pub committed_net_cents: i64,
    pub failed: u64,
    pub in_doubt_resolved_committed: u64,
    pub in_doubt_resolved_rolled_back: u64,
    /// Groups of more than one transaction sent to the server, and the transactions in them
    /// (attempts: a retried group counts again).
    pub groups_sent: u64,
    pub grouped_attempts: u64,
    /// Groups of more than one transaction left in doubt by a broken connection and resolved.
    pub in_doubt_groups: u64,
    pub ledger: Vec<LedgerEntry>,
    pub loaded: schema::Loaded,
    pub audit: schema::BankAudit,
    /// Server settings in force (`SHOW` on one of the run's sessions).
    pub settings: Vec<(String, String)>,
    /// The sizes the controller chose over time; empty when every size was fixed.
    pub batch_sizes: Vec<BatchSizeSample>,
}

/// One transaction on its way through the tier.
#[derive(Debug)]
struct Pending {
    id: i64,
    txn: Txn,
    first_us: u64,
    /// When it last entered the tier's intake (rolling dispatch).
    queued_us: u64,
    /// The connection it was last queued on (rolling dispatch).
    lane: usize,
    restarts: u32,
    /// The largest group it may join (shrinks when a group it was in rolled back).
    group_cap: usize,
}

/// Where an attempt left a transaction.
enum Settled {
    Done(Outcome),
    Retry(AbortCause),
}

/// Shared by every future of the run (one thread: `Cell`s, no locks).
struct Context<'a> {
    config: &'a TierConfig,
    workload: &'a dyn Workload,
    started: Instant,
    run_id: i64,
    next_id: Cell<u32>,
    finished: Cell<u64>,
    resolved_committed: Cell<u64>,
    resolved_rolled_back: Cell<u64>,
    groups_sent: Cell<u64>,
    grouped_attempts: Cell<u64>,
    in_doubt_groups: Cell<u64>,
    /// The batch and group sizes in force.
    sizes: LiveSizes,
    /// What the tuner measures.
    counts: WindowCounts,
}

impl Context<'_> {
    fn now_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    fn pending(&self, rng: &mut WorkloadRng) -> Pending {
        let mut txn = Txn::default();
        self.workload.generate(rng, &mut txn);
        let n = self.next_id.get();
        self.next_id.set(n + 1);
        let now_us = self.now_us();
        Pending {
            id: self.run_id << 32 | i64::from(n),
            txn,
            first_us: now_us,
            queued_us: now_us,
            lane: 0,
            restarts: 0,
            // A fixed group size caps every group; an `auto` one moves, so only a conflict caps.
            group_cap: if self.config.group_max.is_auto() {
                GROUP_MAX_LIMIT
            } else {
                self.config.effective_group_max()
            },
        }
    }
}

/// Totals every executor keeps.
struct Tally {
    recorder: Recorder,
    committed: u64,
    committed_writers: u64,
    committed_net_cents: i64,
    failed: u64,
    ledger: Vec<LedgerEntry>,
    record_ledger: bool,
}

impl Tally {
    fn new(window: Window, record_ledger: bool) -> Self {
        Tally {
            recorder: Recorder::new(window),
            committed: 0,
            committed_writers: 0,
            committed_net_cents: 0,
            failed: 0,
            ledger: Vec::new(),
            record_ledger,
        }
    }

    fn settle(&mut self, context: &Context<'_>, pending: &Pending, outcome: Outcome) {
        let now_us = context.now_us();
        match outcome {
            Outcome::Committed { net_cents } => {
                self.recorder.commit(now_us, now_us - pending.first_us, pending.restarts, pending.txn.procedure);
                context.counts.commit(now_us - pending.first_us);
                self.committed += 1;
                if pending.txn.procedure != BALANCE {
                    self.committed_writers += 1;
                }
                self.committed_net_cents += net_cents;
            }
            Outcome::UserAbort => self.recorder.user_abort(now_us),
            Outcome::Failed => self.failed += 1,
        }
        context.finished.set(context.finished.get() + 1);
        if self.record_ledger {
            self.ledger.push(LedgerEntry {
                txn_id: pending.id,
                procedure: pending.txn.procedure,
                restarts: pending.restarts,
                outcome,
            });
        }
    }

    /// An attempt failed (or was deferred) and will be retried.
    fn abort(&mut self, context: &Context<'_>, now_us: u64, cause: AbortCause) {
        self.recorder.abort(now_us, cause);
        context.counts.abort();
    }

    fn merge(&mut self, other: Tally) {
        self.recorder.merge(&other.recorder);
        self.committed += other.committed;
        self.committed_writers += other.committed_writers;
        self.committed_net_cents += other.committed_net_cents;
        self.failed += other.failed;
        self.ledger.extend(other.ledger);
    }
}

/// Runs the tier on a fresh current-thread runtime; `progress(elapsed_s, finished)` is called a
/// few times a second.
pub fn run_blocking(
    config: &TierConfig,
    workload: &dyn Workload,
    spec: &RunSpec,
    progress: &dyn Fn(f64, u64),
) -> Result<TierReport> {
    config.validate()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| PgError::Io { context: "cannot start the tokio runtime".into(), source })?;
    runtime.block_on(run(config, workload, spec, progress))
}

/// Loads the bank (when configured), runs, drains, and audits the bank.
pub async fn run(
    config: &TierConfig,
    workload: &dyn Workload,
    spec: &RunSpec,
    progress: &dyn Fn(f64, u64),
) -> Result<TierReport> {
    config.validate()?;
    let admin = connect_plain(&config.session.url).await?;
    check_connection_limit(&admin, config.connections).await?;
    let loaded = if config.load { schema::load(&admin, workload).await? } else { schema::inspect(&admin).await? };
    let expected = (workload.key_count() / 3) as i64;
    if loaded.customers != expected {
        return Err(PgError::SchemaSize { found: loaded.customers, expected });
    }
    let run_id: i64 = admin
        .query_one("SELECT nextval('ordo_run_seq')", &[])
        .await
        .map_err(|e| PgError::database("drawing a run id", e))?
        .get(0);
    let timeout = Duration::from_millis(config.reconnect_timeout_ms);
    let mut conns = try_join_all((0..config.connections).map(|_| open_first(&config.session, timeout))).await?;
    let settings = server_settings(&conns[0].client).await?;

    let window = Window::after_warmup(spec.warmup.as_micros() as u64, spec.duration.as_micros() as u64);
    let end_us = (spec.warmup + spec.duration + spec.cooldown).as_micros() as u64;
    let context = Context {
        config,
        workload,
        started: Instant::now(),
        run_id,
        next_id: Cell::new(0),
        finished: Cell::new(0),
        resolved_committed: Cell::new(0),
        resolved_rolled_back: Cell::new(0),
        groups_sent: Cell::new(0),
        grouped_attempts: Cell::new(0),
        in_doubt_groups: Cell::new(0),
        sizes: LiveSizes::initial(config),
        counts: WindowCounts::default(),
    };
    let mut tuner = TierTuner::new(config)?;
    let done = Cell::new(false);
    let ticker = async {
        let mut next_progress_us = 0;
        while !done.get() {
            let now_us = context.now_us();
            if now_us >= next_progress_us {
                progress(now_us as f64 / 1e6, context.finished.get());
                next_progress_us = now_us + PROGRESS_US;
            }
            if let Some(tuner) = tuner.as_mut().filter(|tuner| now_us >= tuner.next_window_us()) {
                tuner.observe(now_us, &context.counts, &context.sizes);
            }
            let next_window_us = tuner.as_ref().map_or(u64::MAX, TierTuner::next_window_us);
            let wake_us = next_progress_us.min(next_window_us);
            tokio::time::sleep(Duration::from_micros(wake_us.saturating_sub(context.now_us()).max(1))).await;
        }
    };
    let work = async {
        let result = match config.mode {
            Mode::NoBatch => run_nobatch(&context, &mut conns, spec, window, end_us).await,
            Mode::Batch | Mode::Reorder => match config.dispatch {
                Dispatch::Barrier => run_batches(&context, &mut conns, spec, window, end_us).await,
                Dispatch::Rolling => run_rolling(&context, &mut conns, spec, window, end_us).await,
            },
        };
        done.set(true);
        result
    };
    let (tally, ()) = tokio::join!(work, ticker);
    let tally = tally?;
    drop(conns);

    // The audit runs on a fresh connection: the admin one may have been cut by a restart.
    let admin = connect_plain(&config.session.url).await?;
    let audit = schema::audit(&admin, Some(run_id)).await?;
    let report = TierReport {
        recorder: tally.recorder,
        measured_s: spec.duration.as_secs_f64(),
        run_id,
        committed: tally.committed,
        committed_writers: tally.committed_writers,
        committed_net_cents: tally.committed_net_cents,
        failed: tally.failed,
        in_doubt_resolved_committed: context.resolved_committed.get(),
        in_doubt_resolved_rolled_back: context.resolved_rolled_back.get(),
        groups_sent: context.groups_sent.get(),
        grouped_attempts: context.grouped_attempts.get(),
        in_doubt_groups: context.in_doubt_groups.get(),
        ledger: tally.ledger,
        loaded,
        audit,
        settings,
        batch_sizes: tuner.map(|tuner| tuner.samples()).unwrap_or_default(),
    };
    if config.load {
        check_audit(&report)?;
    }
    Ok(report)
}

/// The bank must hold the loaded money plus what the committed transactions ordo reported
/// added, and `ordo_txn` one row per committed writing transaction of this run.
pub fn check_audit(report: &TierReport) -> Result<()> {
    let expected = report.loaded.loaded_total_cents + report.committed_net_cents;
    if report.audit.total_cents != expected {
        return Err(PgError::Cluster(format!(
            "audit failed: the bank holds {} cents, but loaded {} plus the net {} of the transactions ordo reported \
             committed is {expected}",
            report.audit.total_cents, report.loaded.loaded_total_cents, report.committed_net_cents
        )));
    }
    if report.audit.run_txn_ids.len() as u64 != report.committed_writers {
        return Err(PgError::Cluster(format!(
            "audit failed: ordo_txn holds {} transactions of run {}, ordo reported {} committed writers",
            report.audit.run_txn_ids.len(),
            report.run_id,
            report.committed_writers
        )));
    }
    Ok(())
}

/// Connects to `url` and reads the settings a result should state (checks reachability and
/// credentials on the way).
pub async fn probe_settings(url: &str) -> Result<Vec<(String, String)>> {
    let client = connect_plain(url).await?;
    server_settings(&client).await
}

/// Refuses, before anything runs, more connections than the server can take: its
/// `max_connections` less the slots reserved for superusers and the tier's own admin and audit
/// connections (otherwise the run would fail partway with "too many clients").
async fn check_connection_limit(admin: &tokio_postgres::Client, connections: usize) -> Result<()> {
    let setting = |name: &'static str| async move {
        let value: String = admin
            .query_one(&format!("SHOW {name}"), &[])
            .await
            .map_err(|e| PgError::database(format!("SHOW {name}"), e))?
            .get(0);
        Ok::<usize, PgError>(value.trim().parse().unwrap_or(0))
    };
    let max = setting("max_connections").await?;
    let reserved = setting("superuser_reserved_connections").await?;
    let in_use: i64 = admin
        .query_one("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'", &[])
        .await
        .map_err(|e| PgError::database("counting connections", e))?
        .get(0);
    // The admin connection is among those in use; the audit opens one more.
    let available = max.saturating_sub(reserved).saturating_sub(in_use as usize).saturating_sub(1);
    if connections > available {
        return Err(PgError::invalid(
            "connections",
            format!(
                "{connections} connections, but the server takes {available} more (max_connections {max}, \
                 {reserved} reserved for superusers, {in_use} in use, 1 for the audit); raise max_connections or use fewer"
            ),
        ));
    }
    Ok(())
}

async fn server_settings(client: &tokio_postgres::Client) -> Result<Vec<(String, String)>> {
    let mut settings = Vec::new();
    for name in [
        "server_version",
        "synchronous_commit",
        "fsync",
        "shared_buffers",
        "max_connections",
        "default_transaction_isolation",
        "wal_sync_method",
        "deadlock_timeout",
        "max_pred_locks_per_page",
    ] {
        let value: String = client
            .query_one(&format!("SHOW {name}"), &[])
            .await
            .map_err(|e| PgError::database(format!("SHOW {name}"), e))?
            .get(0);
        settings.push((name.to_owned(), value));
    }
    Ok(settings)
}

/// What the rolling dispatcher knows of its connections when it plans a batch: per connection,
/// the written keys of the transactions queued or running there, and how many those are.
#[derive(Clone, Copy)]
struct LaneState<'a> {
    keys: &'a [HashMap<u64, u32>],
    loads: &'a [usize],
}

/// Indexes the footprints of the batch's transactions (reusing `footprints`' buffers) and plans
/// the batch into `plan`; returns how long planning took, in nanoseconds.
fn plan_batch(
    context: &Context<'_>,
    dispatcher: &mut Dispatcher,
    batch: &[Option<Pending>],
    footprints: &mut Vec<TxnFootprint>,
    lanes: Option<LaneState<'_>>,
    pins: &mut Vec<Pin>,
    plan: &mut BatchPlan,
) -> Result<u64> {
    let transactions = batch.iter().flatten();
    footprints.resize_with(transactions.clone().count(), || TxnFootprint::new(Vec::new(), Vec::new()));
    for (pending, footprint) in transactions.zip(footprints.iter_mut()) {
        footprint.reads.clear();
        footprint.writes.clear();
        context.workload.footprint(&pending.txn, &mut footprint.reads, &mut footprint.writes);
        footprint.restarts = pending.restarts;
    }
    let planning = Instant::now();
    let busy = match lanes {
        None => Busy::default(),
        Some(LaneState { keys: lane_keys, loads }) => {
            pins.clear();
            pins.extend(footprints.iter().map(|footprint| {
                let mut pin = Pin::Free;
                for (lane, keys) in lane_keys.iter().enumerate() {
                    if !keys.is_empty() && footprint.reads.iter().chain(&footprint.writes).any(|k| keys.contains_key(k))
                    {
                        pin = pin.and(lane);
                    }
                }
                pin
            }));
            Busy { pins, loads }
        }
    };
    dispatcher.plan(footprints, busy, plan).map_err(|e| PgError::invalid("reorder", e.to_string()))?;
    Ok(planning.elapsed().as_nanos() as u64)
}

/// `nobatch`: each connection is a client running one transaction at a time, retrying it
/// until it settles.
async fn run_nobatch(
    context: &Context<'_>,
    conns: &mut [Conn],
    spec: &RunSpec,
    window: Window,
    end_us: u64,
) -> Result<Tally> {
    let workers = conns.iter_mut().enumerate().map(|(worker, conn)| async move {
        let mut rng = rng_from_seed(spec.seed ^ (worker as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut tally = Tally::new(window, spec.record_ledger);
        while context.now_us() < end_us {
            let mut pending = context.pending(&mut rng);
            loop {
                let mut settled = run_queue(context, conn, vec![pending]).await?;
                let (back, outcome) = settled.pop().expect("one transaction in, one out");
                pending = back;
                match outcome {
                    Settled::Done(outcome) => {
                        tally.settle(context, &pending, outcome);
                        break;
                    }
                    Settled::Retry(cause) => {
                        tally.abort(context, context.now_us(), cause);
                        pending.restarts += 1;
                        if pending.restarts >= ATTEMPTS_MAX {
                            tally.settle(context, &pending, Outcome::Failed);
                            break;
                        }
                    }
                }
            }
        }
        Ok::<_, PgError>(tally)
    });
    let mut total = Tally::new(window, spec.record_ledger);
    for tally in try_join_all(workers).await? {
        total.merge(tally);
    }
    Ok(total)
}

/// `batch` and `reorder`: the middle tier forms batches of retried and fresh transactions and
/// dispatches each over the connections, waiting for the batch before forming the next.
async fn run_batches(
    context: &Context<'_>,
    conns: &mut [Conn],
    spec: &RunSpec,
    window: Window,
    end_us: u64,
) -> Result<Tally> {
    let config = context.config;
    let mut dispatcher =
        Dispatcher::new(config.mode, config.placement, conns.len(), config.effective_group_max(), config.reorder)
            .map_err(|e| PgError::invalid("reorder", e.to_string()))?;
    let mut rng = rng_from_seed(spec.seed);
    let mut tally = Tally::new(window, spec.record_ledger);
    let mut carry: Vec<Pending> = Vec::new();
    let mut batch: Vec<Option<Pending>> = Vec::new();
    let mut footprints: Vec<TxnFootprint> = Vec::new();
    let mut plan = BatchPlan::default();
    let drain_end_us = end_us + DRAIN_MS_MAX * 1000;
    loop {
        let now_us = context.now_us();
        let generating = now_us < end_us;
        if !generating && carry.is_empty() {
            break;
        }
        if now_us >= drain_end_us {
            for pending in carry.drain(..) {
                tally.settle(context, &pending, Outcome::Failed);
            }
            break;
        }
        batch.clear();
        batch.extend(carry.drain(..).map(Some));
        if generating {
            while batch.len() < context.sizes.batch() {
                batch.push(Some(context.pending(&mut rng)));
            }
        }
        dispatcher.set_queue_len_target(context.sizes.group());
        let reorder_ns =
            plan_batch(context, &mut dispatcher, &batch, &mut footprints, None, &mut Vec::new(), &mut plan)?;
        tally.recorder.batch(now_us, batch.len(), plan.deferred.len(), reorder_ns);
        for &position in &plan.deferred {
            let mut pending = batch[position].take().expect("positions are distinct");
            tally.abort(context, now_us, AbortCause::Reorder);
            pending.restarts += 1;
            carry.push(pending);
        }
        let queues = plan
            .queues
            .iter()
            .map(|queue| queue.iter().map(|&p| batch[p].take().expect("positions are distinct")).collect::<Vec<_>>());
        let results =
            try_join_all(conns.iter_mut().zip(queues).map(|(conn, queue)| run_queue(context, conn, queue))).await?;
        for (pending, settled) in results.into_iter().flatten() {
            match settled {
                Settled::Done(outcome) => tally.settle(context, &pending, outcome),
                Settled::Retry(cause) => {
                    tally.abort(context, context.now_us(), cause);
                    let mut pending = pending;
                    pending.restarts += 1;
                    if pending.restarts >= ATTEMPTS_MAX {
                        tally.settle(context, &pending, Outcome::Failed);
                    } else {
                        carry.push(pending);
                    }
                }
            }
        }
    }
    Ok(tally)
}

/// What the rolling tier and its connection lanes share (one thread: `RefCell`, no locks;
/// no borrow is held across an `.await`).
struct Lanes {
    queues: Vec<RefCell<VecDeque<Pending>>>,
    wake: Vec<Notify>,
    results: RefCell<Vec<(Pending, Settled)>>,
    results_ready: Notify,
    closing: Cell<bool>,
}

/// One connection of the rolling tier: runs its queue in chunks of the pipeline depth.
async fn lane(context: &Context<'_>, conn: &mut Conn, index: usize, lanes: &Lanes) -> Result<()> {
    loop {
        let chunk_max = context.config.effective_pipeline_depth() * context.sizes.group();
        let chunk: Vec<Pending> = {
            let mut queue = lanes.queues[index].borrow_mut();
            let n = queue.len().min(chunk_max);
            queue.drain(..n).collect()
        };
        if chunk.is_empty() {
            if lanes.closing.get() {
                return Ok(());
            }
            lanes.wake[index].notified().await;
            continue;
        }
        let settled = run_queue(context, conn, chunk).await?;
        lanes.results.borrow_mut().extend(settled);
        lanes.results_ready.notify_one();
    }
}

/// `batch` and `reorder` with rolling dispatch: `clients` closed-loop clients submit to the
/// tier's intake; a batch is planned and appended to the connections' queues as soon as B
/// transactions wait (or the oldest waited `batch_wait_us_max`, or nothing else can arrive),
/// while earlier batches still run. Retries and deferred transactions go first in the next batch.
async fn run_rolling(
    context: &Context<'_>,
    conns: &mut [Conn],
    spec: &RunSpec,
    window: Window,
    end_us: u64,
) -> Result<Tally> {
    let lanes = Lanes {
        queues: conns.iter().map(|_| RefCell::new(VecDeque::new())).collect(),
        wake: conns.iter().map(|_| Notify::new()).collect(),
        results: RefCell::new(Vec::new()),
        results_ready: Notify::new(),
        closing: Cell::new(false),
    };
    let lanes_future =
        try_join_all(conns.iter_mut().enumerate().map(|(index, conn)| lane(context, conn, index, &lanes)));
    let tier = async {
        let result = rolling_tier(context, &lanes, spec, window, end_us).await;
        lanes.closing.set(true);
        for wake in &lanes.wake {
            wake.notify_one();
        }
        result
    };
    let (tally, _) = tokio::try_join!(tier, lanes_future)?;
    Ok(tally)
}

async fn rolling_tier(
    context: &Context<'_>,
    lanes: &Lanes,
    spec: &RunSpec,
    window: Window,
    end_us: u64,
) -> Result<Tally> {
    let config = context.config;
    let mut dispatcher = Dispatcher::new(
        config.mode,
        config.placement,
        lanes.queues.len(),
        config.effective_group_max(),
        config.reorder,
    )
    .map_err(|e| PgError::invalid("reorder", e.to_string()))?;
    let mut rng = rng_from_seed(spec.seed);
    let mut tally = Tally::new(window, spec.record_ledger);
    let mut intake: VecDeque<Pending> = (0..config.effective_clients()).map(|_| context.pending(&mut rng)).collect();
    let mut in_lanes = 0usize;
    let mut batch: Vec<Option<Pending>> = Vec::new();
    let mut footprints: Vec<TxnFootprint> = Vec::new();
    let mut plan = BatchPlan::default();
    let mut taken: Vec<bool> = Vec::new();
    // Per connection: written keys of the transactions queued or running there -> how many.
    let mut lane_keys: Vec<HashMap<u64, u32>> = lanes.queues.iter().map(|_| HashMap::default()).collect();
    // Per connection: transactions queued or running there.
    let mut lane_load: Vec<usize> = vec![0; lanes.queues.len()];
    let mut pins: Vec<Pin> = Vec::new();
    let mut footprint = TxnFootprint::new(Vec::new(), Vec::new());
    let drain_end_us = end_us + DRAIN_MS_MAX * 1000;
    loop {
        let results = std::mem::take(&mut *lanes.results.borrow_mut());
        for (mut pending, settled) in results {
            in_lanes -= 1;
            lane_load[pending.lane] -= 1;
            footprint.reads.clear();
            footprint.writes.clear();
            context.workload.footprint(&pending.txn, &mut footprint.reads, &mut footprint.writes);
            for key in &footprint.writes {
                if let Some(count) = lane_keys[pending.lane].get_mut(key) {
                    *count -= 1;
                    if *count == 0 {
                        lane_keys[pending.lane].remove(key);
                    }
                }
            }
            let now_us = context.now_us();
            let client_free = match settled {
                Settled::Done(outcome) => {
                    tally.settle(context, &pending, outcome);
                    true
                }
                Settled::Retry(cause) => {
                    tally.abort(context, now_us, cause);
                    pending.restarts += 1;
                    if pending.restarts >= ATTEMPTS_MAX {
                        tally.settle(context, &pending, Outcome::Failed);
                        true
                    } else {
                        pending.queued_us = now_us;
                        intake.push_front(pending);
                        false
                    }
                }
            };
            if client_free && now_us < end_us {
                intake.push_back(context.pending(&mut rng));
            }
        }
        let now_us = context.now_us();
        if now_us >= end_us && intake.is_empty() && in_lanes == 0 {
            break;
        }
        if now_us >= drain_end_us {
            for pending in intake.drain(..) {
                tally.settle(context, &pending, Outcome::Failed);
            }
            if in_lanes == 0 {
                break;
            }
        }
        let oldest_waited_us = intake.iter().map(|p| now_us.saturating_sub(p.queued_us)).max().unwrap_or(0);
        let batch_size = context.sizes.batch();
        let ready = intake.len() >= batch_size
            || (!intake.is_empty() && (in_lanes == 0 || oldest_waited_us >= config.batch_wait_us_max));
        if !ready {
            let wait_us = if intake.is_empty() { 100_000 } else { config.batch_wait_us_max - oldest_waited_us };
            let _ = tokio::time::timeout(Duration::from_micros(wait_us.max(1)), lanes.results_ready.notified()).await;
            continue;
        }
        batch.clear();
        let take = intake.len().min(batch_size);
        dispatcher.set_queue_len_target(context.sizes.group());
        batch.extend(intake.drain(..take).map(Some));
        // The components placement sees how loaded the connections are and, with affinity on,
        // which keys they still run.
        let placing = config.mode == Mode::Reorder && config.placement == Placement::Components;
        let keys: &[HashMap<u64, u32>] = if config.affinity { &lane_keys } else { &[] };
        let state = placing.then_some(LaneState { keys, loads: &lane_load });
        let reorder_ns = plan_batch(context, &mut dispatcher, &batch, &mut footprints, state, &mut pins, &mut plan)?;
        tally.recorder.batch(now_us, batch.len(), plan.deferred.len(), reorder_ns);
        for &position in plan.deferred.iter().rev() {
            let mut pending = batch[position].take().expect("positions are distinct");
            tally.abort(context, now_us, AbortCause::Reorder);
            pending.restarts += 1;
            pending.queued_us = now_us;
            intake.push_front(pending);
        }
        // Each planned queue goes to a distinct connection: the planner's (components placement),
        // or the one already holding the most of its balance keys (earlier batches still running
        // there would conflict with it on any other connection), then the one with the shortest
        // backlog; longest queues first.
        let mut planned: Vec<usize> = (0..plan.queues.len()).filter(|&q| !plan.queues[q].is_empty()).collect();
        planned.sort_by_key(|&q| std::cmp::Reverse(plan.queues[q].len()));
        taken.clear();
        taken.resize(lanes.queues.len(), false);
        for &q in &planned {
            let overlap = |lane: usize| -> u32 {
                plan.queues[q]
                    .iter()
                    .flat_map(|&position| footprints[position].writes.iter())
                    .map(|key| lane_keys[lane].get(key).copied().unwrap_or(0))
                    .sum()
            };
            let lane = if plan.placed {
                q
            } else {
                (0..lanes.queues.len())
                    .filter(|&lane| !taken[lane])
                    .max_by_key(|&lane| {
                        // `batch` mode does not look at conflicts, so affinity is reorder's alone; a
                        // connection with a long backlog is not preferred (its queue would only grow).
                        let bounded = config.affinity_backlog_max.is_none_or(|max| lane_load[lane] < max);
                        let affinity =
                            if config.affinity && config.mode == Mode::Reorder && bounded { overlap(lane) } else { 0 };
                        (affinity, std::cmp::Reverse(lanes.queues[lane].borrow().len()))
                    })
                    .expect("no more planned queues than connections")
            };
            taken[lane] = true;
            let mut queue = lanes.queues[lane].borrow_mut();
            for &position in &plan.queues[q] {
                let mut pending = batch[position].take().expect("positions are distinct");
                for &key in &footprints[position].writes {
                    *lane_keys[lane].entry(key).or_default() += 1;
                }
                pending.lane = lane;
                queue.push_back(pending);
                in_lanes += 1;
                lane_load[lane] += 1;
            }
            drop(queue);
            lanes.wake[lane].notify_one();
        }
    }
    Ok(tally)
}

/// Runs `queue` on `conn` in order: split into groups (each one server transaction; a group
/// of one is a plain function call or statements), pipelined up to the configured depth;
/// reconnects and resolves the in-doubt groups if the connection breaks.
async fn run_queue(context: &Context<'_>, conn: &mut Conn, queue: Vec<Pending>) -> Result<Vec<(Pending, Settled)>> {
    if queue.is_empty() {
        return Ok(Vec::new());
    }
    let config = context.config;
    let depth = config.effective_pipeline_depth();
    let caps: Vec<usize> = queue.iter().map(|pending| pending.group_cap).collect();
    let mut lengths = Vec::new();
    group::split(&caps, context.sizes.group(), &mut lengths);
    let attempts: Vec<Vec<Attempt>> = {
        let conn = &*conn;
        let mut rest = queue.as_slice();
        let groups: Vec<&[Pending]> = lengths
            .iter()
            .map(|&len| {
                let (members, tail) = rest.split_at(len);
                rest = tail;
                members
            })
            .collect();
        futures_util::stream::iter(groups)
            .map(|members| async move {
                match (members, config.procedures) {
                    ([only], Procedures::Functions) => vec![attempt::function_call(conn, only.id, &only.txn).await],
                    ([only], Procedures::Statements) => {
                        vec![attempt::statements(conn, context.workload, only.id, &only.txn).await]
                    }
                    _ => {
                        context.groups_sent.set(context.groups_sent.get() + 1);
                        context.grouped_attempts.set(context.grouped_attempts.get() + members.len() as u64);
                        let members: Vec<(i64, &Txn)> = members.iter().map(|p| (p.id, &p.txn)).collect();
                        match config.group_form {
                            GroupForm::Pipelined => attempt::group_pipelined(conn, &members).await,
                            GroupForm::Function => attempt::group_function(conn, &members).await,
                        }
                    }
                }
            })
            .buffered(depth)
            .collect()
            .await
    };
    let mut reconnected = false;
    let mut out = Vec::with_capacity(queue.len());
    let mut queue = queue.into_iter();
    let mut decided = Vec::new();
    for (&len, attempts) in lengths.iter().zip(attempts) {
        let members: Vec<Pending> = queue.by_ref().take(len).collect();
        if let Some(position) = attempts.iter().position(|a| matches!(a, Attempt::Fatal(_))) {
            if let Some(Attempt::Fatal(error)) = attempts.into_iter().nth(position) {
                return Err(error);
            }
            unreachable!("the attempt at {position} is fatal");
        }
        debug_assert_eq!(attempts.len(), members.len(), "one attempt per member");
        if matches!(attempts[0], Attempt::InDoubt) {
            debug_assert!(attempts.iter().all(|a| matches!(a, Attempt::InDoubt)), "a group is in doubt as a whole");
            if !reconnected {
                *conn = reconnect(context, conn).await?;
                reconnected = true;
            }
            resolve_group(context, conn, &members, &mut decided).await?;
            for (pending, decided) in members.into_iter().zip(&decided) {
                let settled = match *decided {
                    Decided::Committed { net_cents } => Settled::Done(Outcome::Committed { net_cents }),
                    Decided::UserAbort => Settled::Done(Outcome::UserAbort),
                    Decided::RolledBack => Settled::Retry(AbortCause::ConnectionLost),
                };
                out.push((pending, settled));
            }
            continue;
        }
        for (mut pending, attempt) in members.into_iter().zip(attempts) {
            let settled = match attempt {
                Attempt::Committed { net_cents } => Settled::Done(Outcome::Committed { net_cents }),
                Attempt::UserAbort => Settled::Done(Outcome::UserAbort),
                Attempt::Conflict(failure) => {
                    if len > 1 {
                        pending.group_cap = config.group_retry.cap_after_conflict(len, pending.group_cap);
                    }
                    Settled::Retry(if failure == Failure::Deadlock {
                        AbortCause::Deadlock
                    } else {
                        AbortCause::Serialization
                    })
                }
                Attempt::InDoubt | Attempt::Fatal(_) => unreachable!("handled above for the whole group"),
            };
            out.push((pending, settled));
        }
    }
    Ok(out)
}

/// Opens a run's connection; a connection cut while being set up is opened again (an
/// unreachable server or bad credentials fail at once).
async fn open_first(session: &SessionConfig, timeout: Duration) -> Result<Conn> {
    let started = Instant::now();
    loop {
        match Conn::open(session).await {
            Err(PgError::Database { source, .. })
                if crate::connection::classify(&source) == Failure::ConnectionLost && started.elapsed() < timeout => {}
            other => return other,
        }
    }
}

async fn reconnect(context: &Context<'_>, conn: &Conn) -> Result<Conn> {
    let timeout = Duration::from_millis(context.config.reconnect_timeout_ms);
    Conn::reopen(&context.config.session, conn.backend_pid, timeout).await
}

/// Decides an in-doubt group (or single transaction) by looking its writers' ids up, on a
/// connection whose predecessor's backend has exited (see `group::settle_in_doubt`).
async fn resolve_group(
    context: &Context<'_>,
    conn: &mut Conn,
    members: &[Pending],
    decided: &mut Vec<Decided>,
) -> Result<()> {
    let started = Instant::now();
    let timeout = Duration::from_millis(context.config.reconnect_timeout_ms);
    let group: Vec<Member> =
        members.iter().map(|p| Member { txn_id: p.id, writer: p.txn.procedure != BALANCE }).collect();
    let writers: Vec<i64> = group.iter().filter(|m| m.writer).map(|m| m.txn_id).collect();
    let mut found: HashMap<i64, i64> = HashMap::default();
    while !writers.is_empty() {
        match conn.client.query(&conn.prepared.lookup_txns, &[&writers]).await {
            Ok(rows) => {
                found.extend(rows.iter().map(|row| (row.get::<_, i64>(0), row.get::<_, i64>(1))));
                break;
            }
            Err(error) if started.elapsed() < timeout => match crate::connection::classify(&error) {
                // The lookup is a serializable read too, and SSI may abort it: ask again.
                Failure::Serialization | Failure::Deadlock => {}
                Failure::ConnectionLost => *conn = reconnect(context, conn).await?,
                Failure::Other => return Err(PgError::database("looking up in-doubt transactions", error)),
            },
            Err(error) => {
                return Err(PgError::InDoubt {
                    count: members.len(),
                    reason: format!("{} at {}", error, redact(&context.config.session.url)),
                });
            }
        }
    }
    group::settle_in_doubt(&group, |id| found.get(&id).copied(), decided);
    if members.len() > 1 {
        context.in_doubt_groups.set(context.in_doubt_groups.get() + 1);
    }
    for decision in decided.iter() {
        let counter =
            if *decision == Decided::RolledBack { &context.resolved_rolled_back } else { &context.resolved_committed };
        counter.set(counter.get() + 1);
    }
    Ok(())
}
