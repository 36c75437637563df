//! What a run of the thread-per-worker engine is: protocol, threads, reordering, store shape.

use ordo_history::{CheckReport, HistoryEntry, Violation};
use thiserror::Error;

use crate::batch_front::Assignment;
use crate::mvcc::VERSIONS_DEFAULT;
use crate::protocol::WORKERS_MAX;

/// A concurrency-control protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtocolKind {
    Silo,
    TicToc,
    NoWait,
    WaitDie,
    MvccSi,
    Ssi,
    Serial,
}

impl ProtocolKind {
    pub const ALL: [ProtocolKind; 7] = [
        ProtocolKind::Silo,
        ProtocolKind::TicToc,
        ProtocolKind::NoWait,
        ProtocolKind::WaitDie,
        ProtocolKind::MvccSi,
        ProtocolKind::Ssi,
        ProtocolKind::Serial,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ProtocolKind::Silo => "silo",
            ProtocolKind::TicToc => "tictoc",
            ProtocolKind::NoWait => "no_wait",
            ProtocolKind::WaitDie => "wait_die",
            ProtocolKind::MvccSi => "mvcc_si",
            ProtocolKind::Ssi => "ssi",
            ProtocolKind::Serial => "serial",
        }
    }

    /// Whether every history it produces is serializable (all but `mvcc_si`).
    pub fn serializable(self) -> bool {
        self != ProtocolKind::MvccSi
    }

    /// The isolation its histories promise, as a checker's verdict names it.
    pub fn isolation(self) -> &'static str {
        if self.serializable() { "serializable" } else { "snapshot isolation" }
    }

    /// Checks `history` with the checker of the isolation it promises: serializability, or
    /// snapshot isolation for `mvcc_si`.
    pub fn check_history(self, history: &[HistoryEntry]) -> Result<CheckReport, Violation> {
        if self.serializable() { ordo_history::check(history) } else { ordo_history::check_snapshot_isolation(history) }
    }

    /// Whether it runs transactions concurrently (all but `serial`).
    pub fn concurrent(self) -> bool {
        self != ProtocolKind::Serial
    }
}

impl std::fmt::Display for ProtocolKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ProtocolKind {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolKind::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            ConfigError::invalid(
                "protocol",
                format!(
                    "unknown protocol `{s}`; expected silo, tictoc, no_wait, wait_die, mvcc_si, ssi, serial or reorder"
                ),
            )
        })
    }
}

/// How one run executes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    pub protocol: ProtocolKind,
    /// Thread-aware batch assignment before execution (§4.2, §5.6).
    pub reorder: bool,
    /// Worker threads (`serial` always uses one).
    pub threads: usize,
    /// Transactions per reorder batch; 0 means 4 per thread.
    pub batch: usize,
    /// How reorder batches are split over the threads.
    pub assignment: Assignment,
    /// Payload bytes per record, copied on every read and write.
    pub payload_bytes: usize,
    /// Versions kept per record by the MVCC protocols.
    pub versions: usize,
    /// Prefetch a transaction's whole footprint (known from its parameters) when it starts,
    /// so its cache misses overlap. Not part of any protocol's paper: off by default.
    pub prefetch: bool,
    /// Transactions each worker draws before the clock starts and replays
    /// ([`crate::pregenerate`]), for workloads that allow it (`Workload::replayable`; the
    /// others draw each one as it is needed, as `None` does for all).
    pub pregenerate: Option<usize>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            protocol: ProtocolKind::Silo,
            reorder: false,
            threads: 2,
            batch: 0,
            assignment: Assignment::Sticky,
            payload_bytes: 100,
            versions: VERSIONS_DEFAULT,
            prefetch: false,
            pregenerate: None,
        }
    }
}

/// Largest payload per record.
pub const PAYLOAD_BYTES_MAX: usize = 4096;
/// Largest reorder batch (its conflict graph takes `n^2` bits).
pub const BATCH_MAX: usize = 10_000;
/// Largest number of versions per record.
pub const VERSIONS_MAX: usize = 64;

impl EngineConfig {
    /// Threads that actually run (`serial` runs one).
    pub fn effective_threads(&self) -> usize {
        if self.protocol.concurrent() { self.threads } else { 1 }
    }

    /// The reorder batch size (4 per thread unless set).
    pub fn effective_batch(&self) -> usize {
        if self.batch == 0 { 4 * self.effective_threads() } else { self.batch }
    }

    /// The name results carry: the protocol, or `reorder` / `reorder+<protocol>`.
    pub fn label(&self) -> String {
        match (self.reorder, self.protocol) {
            (false, p) => p.name().to_owned(),
            (true, ProtocolKind::Silo) => "reorder".to_owned(),
            (true, p) => format!("reorder+{p}"),
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.threads == 0 || self.threads > WORKERS_MAX {
            return Err(ConfigError::invalid("threads", format!("{}: must be in 1..={WORKERS_MAX}", self.threads)));
        }
        if self.batch > BATCH_MAX {
            return Err(ConfigError::invalid("batch", format!("{}: at most {BATCH_MAX} transactions", self.batch)));
        }
        if self.payload_bytes > PAYLOAD_BYTES_MAX {
            return Err(ConfigError::invalid("payload-bytes", format!("at most {PAYLOAD_BYTES_MAX} bytes")));
        }
        if !(2..=VERSIONS_MAX).contains(&self.versions) {
            return Err(ConfigError::invalid("versions", format!("{}: must be in 2..={VERSIONS_MAX}", self.versions)));
        }
        crate::pregenerate::validate(self.pregenerate)?;
        if self.reorder {
            if !self.protocol.concurrent() {
                return Err(ConfigError::invalid("protocol", "reorder runs over a concurrent protocol, not serial"));
            }
            if self.effective_batch() < self.threads {
                return Err(ConfigError::invalid(
                    "batch",
                    format!("{} transactions cannot feed {} threads", self.effective_batch(), self.threads),
                ));
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    #[error("invalid {field}: {reason}")]
    InvalidConfig { field: &'static str, reason: String },
}

impl ConfigError {
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        ConfigError::InvalidConfig { field, reason: reason.into() }
    }
}
