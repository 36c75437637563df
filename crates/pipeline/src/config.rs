//! Configuration of the pipeline engine: the mode (which batching and reordering is on) and
//! every knob, each with its unit in its name.

use std::fmt;
use std::str::FromStr;

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

    /// The threaded runtime's default flush interval (messages handled before a thread's
    /// outboxes go to the other threads) at `concurrency` live transactions. Long intervals
    /// move messages in large batches, which the batching modes want: 256 for them. `base`,
    /// which batches nothing, is fastest when a turn is about one message per live
    /// transaction: the largest power of two up to the concurrency, from 16 to 512 (measured
    /// best or within noise of the best at 50, 100, 200, 300 and 500 live transactions; see
    /// BENCHMARKS.md).
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
pub const MESSAGES_PER_FLUSH_MAX: usize = 1 << 20;

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
/// by moving transaction generation to the validator's side. It is the best of the two-thread
/// splits measured, but [`PLACEMENT_ONE_THREAD`] is faster still (BENCHMARKS.md).
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
    /// Requests per storage batch.
    pub storage_batch_size: usize,
    /// A partial storage batch is served at the end of its thread's turn once it has waited
    /// this long; 0 serves it as soon as no more requests are queued (natural batching).
    pub storage_batch_wait_us_max: u64,
    /// Transactions per validator batch (B).
    pub validator_batch_size: usize,
    /// A partial validator batch is closed at the end of its thread's turn once it has waited
    /// this long; 0 closes it as soon as no more requests are queued (natural batching).
    pub validator_batch_wait_us_max: u64,
    /// How validator batches are reordered.
    pub reorder: FvsConfig,
    pub placement: Placement,
    /// Threaded runtime: messages a thread handles before it flushes its outboxes to the other
    /// threads; 0 picks the mode's default ([`Mode::messages_per_flush`]).
    pub messages_per_flush: usize,
    /// Log the validator's decisions (`None`: nothing is logged).
    pub decision_log: Option<crate::decision_log::DecisionLogConfig>,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            mode: Mode::Srvc,
            concurrency: 300,
            clients: 1,
            processors: 1,
            storage_workers: 1,

            reorder_workers: 1,
            storage_batch_size: 40,
            storage_batch_wait_us_max: 0,
            validator_batch_size: 40,
            validator_batch_wait_us_max: 0,

            reorder: FvsConfig::default(),

            placement: PLACEMENT_DEFAULT.parse().expect("default placement parses"),
            messages_per_flush: 0,
            decision_log: None,
        }
    }
}

impl PipelineConfig {
    /// The flush interval the threaded runtime uses.
    pub fn effective_messages_per_flush(&self) -> usize {
        if self.messages_per_flush == 0 {
            self.mode.messages_per_flush(self.concurrency)
        } else {
            self.messages_per_flush
        }
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
        positive("storage_batch_size", self.storage_batch_size)?;
        positive("validator_batch_size", self.validator_batch_size)?;
        for (field, value, max) in [
            ("concurrency", self.concurrency, CONCURRENCY_MAX),
            ("clients", self.clients, COMPONENTS_MAX),
            ("processors", self.processors, COMPONENTS_MAX),
            ("storage_workers", self.storage_workers, COMPONENTS_MAX),
            ("reorder_workers", self.reorder_workers, COMPONENTS_MAX),
            ("storage_batch_size", self.storage_batch_size, BATCH_SIZE_MAX),
            ("validator_batch_size", self.validator_batch_size, BATCH_SIZE_MAX),
            ("messages_per_flush", self.messages_per_flush, MESSAGES_PER_FLUSH_MAX),
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
    fn bad_configs_are_rejected() {
        assert!(PipelineConfig::default().validate().is_ok());
        let bad = PipelineConfig { validator_batch_size: 0, ..PipelineConfig::default() };
        assert!(bad.validate().is_err());
        let bad = PipelineConfig { clients: 400, ..PipelineConfig::default() };
        assert!(bad.validate().is_err());
        let bad = PipelineConfig { processors: COMPONENTS_MAX + 1, ..PipelineConfig::default() };
        assert!(bad.validate().is_err());
        let bad = PipelineConfig { validator_batch_wait_us_max: BATCH_WAIT_US_MAX + 1, ..PipelineConfig::default() };
        assert!(bad.validate().is_err());
        let bad = PipelineConfig { messages_per_flush: MESSAGES_PER_FLUSH_MAX + 1, ..PipelineConfig::default() };
        assert!(bad.validate().is_err());
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
