//! ordo's write-ahead log (essay below is completed with the logger and checkpoints).

pub mod checkpoint;
pub mod device;
pub mod format;
pub mod group;
pub mod logger;
pub mod naming;
pub mod recovery;

pub use checkpoint::{CheckpointWriter, delete_covered};
pub use device::{DeviceError, Dir, FaultyDir, FileDir};
pub use format::{RowRecord, TxRecord, Write, WriteKind};
pub use group::{Flush, GroupCommit, WorkerEpoch};
pub use logger::{Durability, LogConfig, Logger, SegmentWriter, WorkerLog};
pub use recovery::{Cut, Recovered, RecoveredRow, RecoveryStats, recover};

use thiserror::Error;

/// Errors of the log.
#[derive(Debug, Error)]
pub enum LogError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The log stopped after a failed write or sync; nothing after `durable_epoch` is durable,
    /// and the engine must stop acknowledging commits and exit.
    #[error("log stopped after a failed write or fsync (durable through epoch {durable_epoch}): {reason}")]
    Stopped { durable_epoch: u64, reason: String },
    /// A checkpoint was committed before the log was durable through the epoch its scan
    /// ended in; it could show writes that recovery loses.
    #[error("checkpoint ends in epoch {end_epoch} but the log is durable only through {durable_epoch}; wait for it")]
    CheckpointAhead { end_epoch: u64, durable_epoch: u64 },
}
