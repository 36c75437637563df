//! Configuration of the pipeline engine: the mode (which batching and reordering is on) and
//! every knob, each with its unit in its name.
//!
//! The three batching points (storage batches, validator batches, and the threaded runtime's
//! flush interval) are [`BatchSize`] knobs, `auto` by default: the drivers then let an
//! [`ordo_batching::Tuner`] choose them while the engine runs ([`Tuning`] bounds the search).

use std::fmt;
use std::str::FromStr;

use ordo_batching::{BatchSize, ControllerConfig, Knob};
use ordo_reorder::FvsConfig;
use thiserror::Error;

/// The paper's system modes (§5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// No batching anywhere: storage serves requests as they arrive, the validator validates
    /// each request as it arrives.
    Base,
    /// Batching at storage and validator, no reordering: batches are served in arrival order.
    Batch,
    /// Storage batching with reordering (writes before reads); validator unbatched.
    Sr,
    /// Validator batching with reordering; storage unbatched.
    Vc,
    /// Both.
    Srvc,
}

impl Mode {
    pub const ALL: [Mode; 5] = [Mode::Base, Mode::Batch, Mode::Sr, Mode::Vc, Mode::Srvc];

    /// The threaded runtime's best fixed flush interval as measured (messages handled before a
    /// thread's outboxes go to the other threads) at `concurrency` live transactions; where an
    /// `auto` flush interval starts. Long intervals move messages in large batches, which the
    /// batching modes want: 256 for them. `base`, which batches nothing, is fastest when a turn
    /// is about one message per live transaction: the largest power of two up to the
    /// concurrency, from 16 to 512 (measured best or within noise of the best at 50, 100, 200,
    /// 300 and 500 live transactions; see BENCHMARKS.md).
    pub fn messages_per_flush(self, concurrency: usize) -> usize {
        match self {
            Mode::Base => {
                let at_most = concurrency.clamp(16, 512);
                1 << at_most.ilog2()
            }
            Mode::Batch | Mode::Sr | Mode::Vc | Mode::Srvc => 256,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Base => "base",
            Mode::Batch => "batch",
            Mode::Sr => "sr",
            Mode::Vc => "vc",
            Mode::Srvc => "srvc",
        }
    }

    pub fn storage_batching(self) -> bool {
        matches!(self, Mode::Batch | Mode::Sr | Mode::Srvc)
    }

    /// Within a storage batch, apply every write before serving any read (§3.1).
    pub fn storage_reordering(self) -> bool {
        matches!(self, Mode::Sr | Mode::Srvc)
    }

    pub fn validator_batching(self) -> bool {
        matches!(self, Mode::Batch | Mode::Vc | Mode::Srvc)
    }

    /// Pre-validate and reorder validator batches (§3.2, Appendix A).
    pub fn validator_reordering(self) -> bool {
        matches!(self, Mode::Vc | Mode::Srvc)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = ConfigError;
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Mode::ALL.into_iter().find(|m| m.name() == name.trim().to_ascii_lowercase()).ok_or_else(|| {
            ConfigError::Invalid {
                field: "mode",
                reason: format!("unknown mode `{name}`; expected base, batch, sr, vc or srvc"),
            }
        })
    }
}

/// `--mode` on the command line: the names of [`Mode::name`].
#[cfg(feature = "clap")]
impl clap::ValueEnum for Mode {
    fn value_variants<'a>() -> &'a [Self] {
        &Mode::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

#[derive(Debug, Clone, PartialEq, Error)]
pub enum ConfigError {
    #[error("invalid {field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    /// The validator's write-ahead log stopped after a failed write or fsync: decisions after
    /// its last durable epoch were never released.
    #[error("the validator's write-ahead log stopped: {0}")]
    LogStopped(String),
}

/// Most live transactions: each holds its read and write sets and messages in flight, so a
/// million would need gigabytes before the first commit.
pub const CONCURRENCY_MAX: usize = 100_000;
/// Largest storage or validator batch: a validator batch's dependency graph takes `n^2` bits
/// and its plan grows faster than linearly.
pub const BATCH_SIZE_MAX: usize = 10_000;
/// Most instances of one component (clients, processors, storage partitions, reorder workers).
/// Every processor keeps a queue per storage partition, so their product must stay small; and
/// two cores keep a handful of them busy at most.
pub const COMPONENTS_MAX: usize = 256;
/// Longest a partial batch may wait for more requests (µs): one second.
pub const BATCH_WAIT_US_MAX: u64 = 1_000_000;
/// Largest flush interval (messages a runtime thread handles before flushing its outboxes).
pub const MESSAGES_PER_FLUSH_MAX: usize = ordo_batching::BATCH_SIZE_MAX as usize;
/// Shortest and longest measurement window of the batch-size controller.
pub const TUNING_WINDOW_US_MIN: u64 = 100;
pub const TUNING_WINDOW_US_MAX: u64 = 60_000_000;

/// Component roles, as named in placements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Client,
    Processor,
    Storage,
    Validator,
    Reorder,
}

impl Role {
    pub const ALL: [Role; 5] = [Role::Client, Role::Processor, Role::Storage, Role::Validator, Role::Reorder];

    pub fn name(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Processor => "processor",
            Role::Storage => "storage",
            Role::Validator => "validator",
            Role::Reorder => "reorder",
        }
    }
}

/// Which roles each thread of the threaded runtime hosts: threads separated by `;`, roles by
/// `,`. Instances of a role are dealt round-robin over the threads that list it. The default,
/// `processor,storage;client,validator,reorder`, is the paper's deployment on two cores: it
/// keeps reads local to the processor's thread (the chattiest traffic) and balances the cores
/// by moving transaction generation to the validator's side. [`PLACEMENT_ONE_THREAD`] is
/// faster than it and than every other two-thread split measured (BENCHMARKS.md, "Modes on
/// both deployments"), and the default stays the paper's deployment, whose cross-core
/// messages are what its batching saves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub threads: Vec<Vec<Role>>,
}

pub const PLACEMENT_DEFAULT: &str = "processor,storage;client,validator,reorder";

/// Every component on one thread: no message crosses cores. On 2 cores this is faster than
/// the two-thread split for every mode (BENCHMARKS.md), because handing a message and its
/// payload to the other core costs more than the work it carries.
pub const PLACEMENT_ONE_THREAD: &str = "processor,storage,client,validator,reorder";

/// Short names for the two deployments BENCHMARKS.md compares.
const PLACEMENT_NAMES: [(&str, &str); 2] = [("split", PLACEMENT_DEFAULT), ("single", PLACEMENT_ONE_THREAD)];

impl FromStr for Placement {
    type Err = ConfigError;
    /// A list of threads (`processor,storage;client,validator,reorder`), or `split` (that one,
    /// the default) or `single` (every role on one thread).
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let spec = PLACEMENT_NAMES.iter().find(|(name, _)| *name == spec.trim()).map_or(spec, |&(_, s)| s);
        let invalid = |reason: String| ConfigError::Invalid { field: "placement", reason };
        let mut threads = Vec::new();
        for thread in spec.split(';') {
            let mut roles = Vec::new();
            for name in thread.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let role = Role::ALL.into_iter().find(|r| r.name() == name).ok_or_else(|| {
                    invalid(format!(
                        "unknown role `{name}` (roles: client, processor, storage, validator, reorder; or a whole \
                         placement: split, single)"
                    ))
                })?;
                if !roles.contains(&role) {
                    roles.push(role);
                }
            }
            if roles.is_empty() {
                return Err(invalid(format!("`{spec}` has a thread with no roles")));
            }
            threads.push(roles);
        }
        for role in Role::ALL {
            if !threads.iter().any(|t| t.contains(&role)) {
                return Err(invalid(format!("no thread hosts the {} role", role.name())));
            }
        }
        Ok(Placement { threads })
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let threads: Vec<String> =
            self.threads.iter().map(|t| t.iter().map(|r| r.name()).collect::<Vec<_>>().join(",")).collect();
        f.write_str(&threads.join(";"))
    }
}

/// How `auto` knobs are searched: the measurement window, and each kind of knob's bounds and
/// search (the flush interval's `batch_size_initial` is replaced by the mode's measured best,
/// [`Mode::messages_per_flush`], and a batch's by half the concurrency unless
/// `batch_initial_from_concurrency` is off, see [`PipelineConfig::initial_validator_batch_size`],
/// both clamped to their bounds; a batch's maximum is clamped to what the concurrency can fill,
/// see [`PipelineConfig::knobs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    /// Shortest measurement window (virtual microseconds under the simulation driver).
    pub window_us: u64,
    /// A window goes on past `window_us` until it holds this many commits (so a window's
    /// goodput is not mostly counting noise when few transactions commit), up to
    /// `window_us_max`.
    pub window_commits_min: u64,
    /// Longest measurement window.
    pub window_us_max: u64,
    /// Storage and validator batches. Their search keeps an anchor
    /// ([`ControllerConfig::return_commit_ratio_drop`], 10%): under optimistic concurrency
    /// control a batch size's commit ratio tells a walk-off onto a plateau from a move.
    pub batch: ControllerConfig,
    /// Whether `auto` batches start at half the concurrency (the default), with a first step
    /// of at most [`BATCH_STEP_RATIO_FROM_CONCURRENCY`], rather than at
    /// `batch.batch_size_initial` with `batch.step_ratio_initial`.
    pub batch_initial_from_concurrency: bool,
    /// The threaded runtime's flush interval, in messages.
    pub flush: ControllerConfig,
    /// Most entries of the recorded size history.
    pub history_len_max: usize,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            window_us: 50_000,
            window_commits_min: 2_000,
            window_us_max: 1_000_000,
            // The initial 40 is used only without `batch_initial_from_concurrency`.
            batch: ControllerConfig {
                return_commit_ratio_drop: Some(0.1),
                ..ControllerConfig::with_bounds(8, 40, 320)
            },
            batch_initial_from_concurrency: true,
            flush: ControllerConfig::with_bounds(16, 256, 2048),
            history_len_max: 256,
        }
    }
}

/// The first step of a batch search that starts at half the concurrency
/// ([`Tuning::batch_initial_from_concurrency`]). That start lies within a step of 1.2 of the
/// best fixed size in every cell measured (0.5-0.65 of the concurrency), and the peak there is
/// sharp: with 100 live transactions at θ = 0.8 sizes 55-65 run at their best and 50 or 75 at
/// about 0.7x of it. The search's usual first step of 1.5 spends its first round on 33 and 75;
/// a step of 1.2 looks at 42 and 60 instead, and still grows (1.44, then 2) while moves keep
/// one direction, should the peak be farther.
pub const BATCH_STEP_RATIO_FROM_CONCURRENCY: f64 = 1.2;

/// Every knob of the pipeline engine.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineConfig {
    pub mode: Mode,
    /// Live transactions in the system (the paper's concurrency level).
    pub concurrency: usize,
    pub clients: usize,
    pub processors: usize,
    pub storage_workers: usize,
    pub reorder_workers: usize,
    /// Requests per storage batch (a cap: see `storage_batch_wait_us_max`).
    pub storage_batch_size: BatchSize,
    /// A partial storage batch is served at the end of its thread's turn once it has waited
    /// this long; 0 serves it as soon as no more requests are queued (natural batching).
    pub storage_batch_wait_us_max: u64,
    /// Transactions per validator batch (B; a cap: see `validator_batch_wait_us_max`).
    pub validator_batch_size: BatchSize,
    /// A partial validator batch is closed at the end of its thread's turn once it has waited
    /// this long; 0 closes it as soon as no more requests are queued (natural batching).
    pub validator_batch_wait_us_max: u64,
    /// How validator batches are reordered.
    pub reorder: FvsConfig,
    pub placement: Placement,
    /// Threaded runtime: messages a thread handles before it flushes its outboxes to the other
    /// threads (only matters with more than one thread).
    pub messages_per_flush: BatchSize,
    /// How the `auto` knobs are searched.
    pub tuning: Tuning,
    /// Log the validator's decisions (`None`: nothing is logged).
    pub decision_log: Option<crate::decision_log::DecisionLogConfig>,
}

/// The default concurrency level: loaded but not thrashing on the reference machine (2 cores;
/// BENCHMARKS.md, "Default concurrency"). With the default mode (`srvc`) on the default
/// deployment (two threads), 25 live transactions ran fastest at θ = 0.8 and 0.9 and within 6%
/// of the fastest at θ = 0.6, where it aborts 2-47% of attempts against 10-83% at 100; on one
/// thread 15-25 were fastest. The paper's experiments (`ordo headline`, `ordo figures`) name
/// their own, higher, contention levels.
pub const CONCURRENCY_DEFAULT: usize = 25;

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            mode: Mode::Srvc,
            concurrency: CONCURRENCY_DEFAULT,
            clients: 1,
            processors: 1,
            storage_workers: 1,

            reorder_workers: 1,
            storage_batch_size: BatchSize::Auto,
            storage_batch_wait_us_max: 0,
            validator_batch_size: BatchSize::Auto,
            validator_batch_wait_us_max: 0,

            reorder: FvsConfig::default(),

            placement: PLACEMENT_DEFAULT.parse().expect("default placement parses"),
            messages_per_flush: BatchSize::Auto,
            tuning: Tuning::default(),
            decision_log: None,
        }
    }
}

/// Names of the pipeline's knobs in a [`ordo_batching::Tuner`] and in results.
pub const KNOB_STORAGE: &str = "storage";
pub const KNOB_VALIDATOR: &str = "validator";
pub const KNOB_FLUSH: &str = "flush";
/// Both batches as one knob (see [`PipelineConfig::knobs`]).
pub const KNOB_BATCH: &str = "batch";

impl PipelineConfig {
    /// The storage batch cap the engine starts with (the fixed size, or where `auto` starts).
    pub fn initial_storage_batch_size(&self) -> usize {
        let fillable = if self.batches_tuned_together() { self.concurrency } else { 2 * self.concurrency };
        self.storage_batch_size.or(self.batch_controller(fillable).batch_size_initial) as usize
    }

    /// Whether the storage and validator batches are one knob: both batched and both `auto`.
    fn batches_tuned_together(&self) -> bool {
        self.mode.storage_batching()
            && self.mode.validator_batching()
            && self.storage_batch_size.is_auto()
            && self.validator_batch_size.is_auto()
    }

    /// The validator batch cap the engine starts with: the fixed size, or for `auto` half the
    /// concurrency within the search's bounds. With half of the live transactions per batch,
    /// two batches take turns: one is validated while the other's transactions read and
    /// execute. Measured on the reference machine (BENCHMARKS.md, "Adaptive batch sizes"), the
    /// best fixed size of srvc was 150 at every skew with 300 live transactions and 60 with 100
    /// (from θ = 0.7 on both hosts, at every skew on one), and sizes past about two thirds fill
    /// one batch and leave the next one short (at θ = 0.8, 80 of 100 aborted 64% of its
    /// attempts against 60's 35%).
    pub fn initial_validator_batch_size(&self) -> usize {
        self.validator_batch_size.or(self.batch_controller(self.concurrency).batch_size_initial) as usize
    }

    /// The batch search, its maximum clamped to `fillable` (see [`PipelineConfig::knobs`]).
    fn batch_controller(&self, fillable: usize) -> ControllerConfig {
        let bounds = &self.tuning.batch;
        let max = u32::try_from(fillable).unwrap_or(u32::MAX).clamp(bounds.batch_size_min, bounds.batch_size_max);
        let (initial, step_ratio_initial) = if self.tuning.batch_initial_from_concurrency {
            let half = u32::try_from(self.concurrency / 2).unwrap_or(u32::MAX);
            (half, bounds.step_ratio_initial.min(BATCH_STEP_RATIO_FROM_CONCURRENCY).max(bounds.step_ratio_min))
        } else {
            (bounds.batch_size_initial, bounds.step_ratio_initial)
        };
        ControllerConfig {
            batch_size_max: max,
            batch_size_initial: initial.clamp(bounds.batch_size_min, max),
            step_ratio_initial,
            ..bounds.clone()
        }
    }

    /// The flush interval the threaded runtime starts with: the fixed one, or for `auto` the
    /// mode's measured best ([`Mode::messages_per_flush`]) within the search's bounds.
    pub fn initial_messages_per_flush(&self) -> usize {
        self.messages_per_flush.or(self.flush_controller().batch_size_initial) as usize
    }

    fn flush_controller(&self) -> ControllerConfig {
        let bounds = &self.tuning.flush;
        let best = u32::try_from(self.mode.messages_per_flush(self.concurrency)).unwrap_or(u32::MAX);
        ControllerConfig {
            batch_size_initial: best.clamp(bounds.batch_size_min, bounds.batch_size_max),
            ..bounds.clone()
        }
    }

    /// The batching points this configuration has, as the tuner's knobs: the storage batch
    /// when the mode batches at storage, the validator batch when it batches at the validator,
    /// and the flush interval when the placement has more than one thread (with one thread no
    /// message waits for a flush). The simulation driver, which has no flushes, drops the last.
    ///
    /// When a mode batches at both and both are `auto`, they are one knob, `batch`, that sets
    /// both caps alike. Both batches reorder to save aborts, so they substitute for each other:
    /// tuned apart, on one goodput signal, the search zig-zags along the ridge where their
    /// effects trade off (measured under the simulation driver: the storage cap ran to its
    /// bound while the validator's stayed small, far from the best pair), and each knob gets
    /// only every other round. A fixed size for either one tunes the other alone.
    ///
    /// A batch's search stops where the concurrency stops filling it: a validator batch holds
    /// at most one request per live transaction, a storage batch at most a read and a write per
    /// live transaction, so a larger cap never binds and searching above it would only wander.
    pub fn knobs(&self) -> Vec<Knob> {
        let mut knobs = Vec::new();
        if self.batches_tuned_together() {
            knobs.push(Knob {
                name: KNOB_BATCH,
                setting: BatchSize::Auto,
                controller: self.batch_controller(self.concurrency),
            });
        } else if self.mode.storage_batching() {
            knobs.push(Knob {
                name: KNOB_STORAGE,
                setting: self.storage_batch_size,
                controller: self.batch_controller(2 * self.concurrency),
            });
        }
        if self.mode.validator_batching() && !self.batches_tuned_together() {
            knobs.push(Knob {
                name: KNOB_VALIDATOR,
                setting: self.validator_batch_size,
                controller: self.batch_controller(self.concurrency),
            });
        }
        if self.placement.threads.len() > 1 {
            knobs.push(Knob {
                name: KNOB_FLUSH,
                setting: self.messages_per_flush,
                controller: self.flush_controller(),
            });
        }
        knobs
    }

    /// Checks every knob against its range (see [`CONCURRENCY_MAX`], [`BATCH_SIZE_MAX`],
    /// [`COMPONENTS_MAX`], [`BATCH_WAIT_US_MAX`], [`MESSAGES_PER_FLUSH_MAX`]).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = |field: &'static str, value: usize| {
            if value == 0 { Err(ConfigError::Invalid { field, reason: "must be at least 1".into() }) } else { Ok(()) }
        };
        positive("concurrency", self.concurrency)?;
        positive("clients", self.clients)?;
        positive("processors", self.processors)?;
        positive("storage_workers", self.storage_workers)?;
        positive("reorder_workers", self.reorder_workers)?;
        let fixed = |size: BatchSize| size.get().map_or(0, |size| size as usize);
        for (field, value, max) in [
            ("concurrency", self.concurrency, CONCURRENCY_MAX),
            ("clients", self.clients, COMPONENTS_MAX),
            ("processors", self.processors, COMPONENTS_MAX),
            ("storage_workers", self.storage_workers, COMPONENTS_MAX),
            ("reorder_workers", self.reorder_workers, COMPONENTS_MAX),
            ("storage_batch_size", fixed(self.storage_batch_size), BATCH_SIZE_MAX),
            ("validator_batch_size", fixed(self.validator_batch_size), BATCH_SIZE_MAX),
            ("messages_per_flush", fixed(self.messages_per_flush), MESSAGES_PER_FLUSH_MAX),
        ] {
            if value > max {
                return Err(ConfigError::Invalid { field, reason: format!("{value} is more than the limit of {max}") });
            }
        }
        for (field, value) in [
            ("storage_batch_wait_us_max", self.storage_batch_wait_us_max),
            ("validator_batch_wait_us_max", self.validator_batch_wait_us_max),
        ] {
            if value > BATCH_WAIT_US_MAX {
                return Err(ConfigError::Invalid {
                    field,
                    reason: format!("{value} µs is more than the limit of {BATCH_WAIT_US_MAX}"),
                });
            }
        }
        if self.clients > self.concurrency {
            return Err(ConfigError::Invalid {
                field: "clients",
                reason: format!("{} clients cannot share a concurrency level of {}", self.clients, self.concurrency),
            });
        }
        self.reorder.validate().map_err(|e| ConfigError::Invalid { field: "reorder", reason: e.to_string() })?;
        self.validate_tuning()
    }

    fn validate_tuning(&self) -> Result<(), ConfigError> {
        let tuning = &self.tuning;
        for (field, window_us) in
            [("tuning.window_us", tuning.window_us), ("tuning.window_us_max", tuning.window_us_max)]
        {
            if !(TUNING_WINDOW_US_MIN..=TUNING_WINDOW_US_MAX).contains(&window_us) {
                return Err(ConfigError::Invalid {
                    field,
                    reason: format!("{window_us} is outside {TUNING_WINDOW_US_MIN}..={TUNING_WINDOW_US_MAX}"),
                });
            }
        }
        if tuning.window_us_max < tuning.window_us {
            return Err(ConfigError::Invalid {
                field: "tuning.window_us_max",
                reason: format!("{} is shorter than window_us {}", tuning.window_us_max, tuning.window_us),
            });
        }
        for (field, controller, max) in
            [("tuning.batch", &tuning.batch, BATCH_SIZE_MAX), ("tuning.flush", &tuning.flush, MESSAGES_PER_FLUSH_MAX)]
        {
            controller.validate().map_err(|e| ConfigError::Invalid { field, reason: e.to_string() })?;
            if controller.batch_size_max as usize > max {
                return Err(ConfigError::Invalid {
                    field,
                    reason: format!("batch_size_max {} is more than the limit of {max}", controller.batch_size_max),
                });
            }
        }
        if !(2..=ordo_batching::HISTORY_LEN_MAX).contains(&tuning.history_len_max) {
            return Err(ConfigError::Invalid {
                field: "tuning.history_len_max",
                reason: format!("{} is outside 2..={}", tuning.history_len_max, ordo_batching::HISTORY_LEN_MAX),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_placements_parse() {
        for mode in Mode::ALL {
            assert_eq!(mode.name().parse::<Mode>().unwrap(), mode);
        }
        assert!("fast".parse::<Mode>().is_err());
        assert_eq!("single".parse::<Placement>().unwrap().to_string(), PLACEMENT_ONE_THREAD);
        assert_eq!(" split ".parse::<Placement>().unwrap().to_string(), PLACEMENT_DEFAULT);
        let base_flushes: Vec<usize> = [1, 50, 100, 300, 512, 5000].map(|c| Mode::Base.messages_per_flush(c)).into();
        assert_eq!(base_flushes, [16, 32, 64, 256, 512, 512]);
        assert_eq!(Mode::Srvc.messages_per_flush(100), 256);
        let placement: Placement = "client,processor;storage;validator,reorder".parse().unwrap();
        assert_eq!(placement.threads.len(), 3);
        assert_eq!(placement.to_string(), "client,processor;storage;validator,reorder");
        assert!("client,processor,storage".parse::<Placement>().is_err(), "validator and reorder missing");
        assert!("client;;validator".parse::<Placement>().is_err());
        assert!("client,cpu".parse::<Placement>().is_err());
    }

    #[test]
    fn knobs_are_the_batching_points_the_mode_and_placement_have() {
        let names = |mode: Mode, placement: &str| -> Vec<&'static str> {
            let config = PipelineConfig { mode, placement: placement.parse().unwrap(), ..PipelineConfig::default() };
            config.knobs().iter().map(|knob| knob.name).collect()
        };
        assert_eq!(names(Mode::Srvc, "split"), [KNOB_BATCH, KNOB_FLUSH], "both batches auto: one knob");
        let storage_fixed =
            PipelineConfig { storage_batch_size: BatchSize::fixed(10).unwrap(), ..PipelineConfig::default() };
        let knobs: Vec<&str> = storage_fixed.knobs().iter().map(|knob| knob.name).collect();
        assert_eq!(knobs, [KNOB_STORAGE, KNOB_VALIDATOR, KNOB_FLUSH]);
        assert_eq!(storage_fixed.knobs()[0].setting, BatchSize::fixed(10).unwrap());
        assert_eq!(names(Mode::Sr, "split"), [KNOB_STORAGE, KNOB_FLUSH]);
        assert_eq!(names(Mode::Vc, "single"), [KNOB_VALIDATOR]);
        assert_eq!(names(Mode::Base, "split"), [KNOB_FLUSH]);
        assert!(names(Mode::Base, "single").is_empty());
        // An auto flush interval starts at the mode's measured best.
        let base = PipelineConfig { mode: Mode::Base, concurrency: 100, ..PipelineConfig::default() };
        assert_eq!(base.initial_messages_per_flush(), 64);
        assert_eq!(base.knobs()[0].controller.batch_size_initial, 64);
        let fixed = PipelineConfig { messages_per_flush: BatchSize::fixed(8).unwrap(), ..base };
        assert_eq!(fixed.initial_messages_per_flush(), 8);
        assert_eq!(PipelineConfig::default().initial_validator_batch_size(), CONCURRENCY_DEFAULT / 2);
        let hundred = PipelineConfig { concurrency: 100, ..PipelineConfig::default() };
        assert_eq!(hundred.initial_validator_batch_size(), 50, "half the concurrency");
        assert_eq!(hundred.knobs()[0].controller.step_ratio_initial, BATCH_STEP_RATIO_FROM_CONCURRENCY);
        let crowded = PipelineConfig { concurrency: 300, ..PipelineConfig::default() };
        assert_eq!((crowded.initial_storage_batch_size(), crowded.initial_validator_batch_size()), (150, 150));
        // Batch searches stop where the concurrency stops filling a batch.
        let small = PipelineConfig { concurrency: 30, ..PipelineConfig::default() };
        let maxima: Vec<u32> = small.knobs().iter().map(|knob| knob.controller.batch_size_max).collect();
        assert_eq!(maxima, [30, 2048]);
        assert_eq!(small.knobs()[0].controller.batch_size_initial, 15);
        assert_eq!((small.initial_storage_batch_size(), small.initial_validator_batch_size()), (15, 15));
        let tiny = PipelineConfig { concurrency: 4, ..PipelineConfig::default() };
        assert_eq!(tiny.initial_validator_batch_size(), 8, "at least the search's minimum");
        let mut given = hundred;
        given.tuning.batch_initial_from_concurrency = false;
        given.tuning.batch.batch_size_initial = 30;
        assert_eq!(given.initial_validator_batch_size(), 30, "the configured start");
        assert_eq!(given.knobs()[0].controller.step_ratio_initial, given.tuning.batch.step_ratio_initial);
        let apart = PipelineConfig { validator_batch_size: BatchSize::fixed(5).unwrap(), ..small.clone() };
        let maxima: Vec<u32> = apart.knobs().iter().map(|knob| knob.controller.batch_size_max).collect();
        assert_eq!(maxima, [60, 30, 2048], "apart, a storage batch may hold a read and a write per transaction");
        assert_eq!(apart.initial_storage_batch_size(), 15);
    }

    #[test]
    fn bad_configs_are_rejected() {
        assert!(PipelineConfig::default().validate().is_ok());
        let bad =
            PipelineConfig { validator_batch_size: BatchSize::fixed(10_001).unwrap(), ..PipelineConfig::default() };
        assert!(bad.validate().is_err());
        let bad =
            PipelineConfig { messages_per_flush: BatchSize::fixed(100_000).unwrap(), ..PipelineConfig::default() };
        assert!(bad.validate().is_ok(), "flushes may be longer than batches");
        let mut bad = PipelineConfig::default();
        bad.tuning.window_us = 0;
        assert!(bad.validate().is_err());
        let mut bad = PipelineConfig::default();
        bad.tuning.batch.batch_size_max = 20_000;
        assert!(bad.validate().is_err(), "the search may not leave the engine's own limit");
        let bad = PipelineConfig { clients: 400, ..PipelineConfig::default() };
        assert!(bad.validate().is_err());
        let bad = PipelineConfig { processors: COMPONENTS_MAX + 1, ..PipelineConfig::default() };
        assert!(bad.validate().is_err());
        let bad = PipelineConfig { validator_batch_wait_us_max: BATCH_WAIT_US_MAX + 1, ..PipelineConfig::default() };
        assert!(bad.validate().is_err());
        assert!(BatchSize::fixed(MESSAGES_PER_FLUSH_MAX as u32 + 1).is_none(), "no flush interval above the limit");
    }

    #[cfg(feature = "clap")]
    #[test]
    fn command_line_names_are_the_parsers() {
        use clap::ValueEnum;
        for mode in Mode::ALL {
            let name = mode.to_possible_value().unwrap();
            assert_eq!(name.get_name().parse::<Mode>().unwrap(), mode);
        }
    }
}
