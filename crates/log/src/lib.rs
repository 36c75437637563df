//! ordo's write-ahead log: redo records of committed transactions, made durable a whole
//! epoch at a time (Silo's group commit, SOSP 2013 section 4.9), with fuzzy checkpoints
//! that bound recovery time and disk use, and a recovery that cuts a torn tail.
//!
//! # Layout
//!
//! An I/O-free core and thin drivers (STYLE.md rule 1):
//!
//! ```text
//!  format      frames and headers, decode never panics; writes encoded one by one, views
//!              that borrow rows (pure)
//!  group       GroupCommit: which epoch can close, what to write   (pure, explicit now_ms)
//!  recovery    checkpoint (streamed) + segments -> rows, cut the tail  (over the Dir trait)
//!  checkpoint  temp file -> sync -> rename -> sync dir -> delete covered segments
//!  logger      SegmentWriter (rotation) and the Logger thread (fail-stop), or a manual one
//!  device      Dir trait: FileDir (std::fs + fsync), FaultyDir (in memory, crashes)
//!  naming      segment-<n>.log, checkpoint-<begin epoch>.ckpt, checkpoint.tmp
//!  manifest    manifest.json: the workload and schema a directory holds rows of
//! ```
//!
//! Users: the thread-per-worker engine over tables (`ordo_threads::tables::durable`: every
//! protocol's redo records, fuzzy checkpoints, recovery into its database) and the pipeline
//! engine's validator (`ordo_pipeline::decision_log`: its commit decisions, with timestamps
//! and values). `ordo recover DIR` recovers and reports; `--dump` writes the rows.
//!
//! # The record format
//!
//! Each segment starts with a 36-byte header (magic, format version, kind, segment number,
//! first epoch, header CRC); then frames `[len u32][crc32 u32][payload]`:
//!
//! ```text
//!  | hdr | len crc Tx(e=4: w1 w2) | len crc Tx(e=4) | len crc Closed(4) | len crc Tx(e=5) ...
//!                                                   ^ everything of epochs <= 4 precedes it
//! ```
//!
//! A transaction payload holds its epoch, an optional commit timestamp and its writes
//! `(table u16, put|delete, key u64, version u64, row words)`; see [`mod@format`].
//!
//! # Group commit: a timeline with two workers
//!
//! ```text
//!  global epoch:   1 ............. | 2 ............... | 3
//!  worker A:       T1(e1)  T2(e1)  | T4(e2)            |
//!  worker B:       T3(e1) ......... still in e1 -> idle |
//!  logger:                         A in 2, B in 1: epoch 1 cannot close yet
//!                                  B idle: write T1 T2 T3, Closed(1), fsync,
//!                                  durable_epoch = 1 -> T1 T2 T3 acknowledged
//!                                                       T4 waits for Closed(2)
//! ```
//!
//! # What is durable when
//!
//! * `Durability::Sync`: a transaction is acknowledged once `durable_epoch >= its epoch`,
//!   i.e. after the fsync of the flush that wrote its epoch's marker.
//! * `Durability::Async`: the same bytes are written and synced, but the transaction is
//!   acknowledged when appended; a crash may lose the last epochs, never part of one.
//! * `Durability::Off`: nothing is written.
//!
//! Recovery applies a transaction only if the `Closed` marker of its epoch (or a later one)
//! follows it, so the recovered state is always a whole number of epochs: a prefix of the
//! commit order in epoch order, containing every acknowledged transaction.
//!
//! # Checkpoints and recovery: the highest version wins
//!
//! A fuzzy checkpoint begins at an epoch `B` (all earlier epochs installed) and reads rows
//! one by one while transactions run; it is committed (renamed into place) only once the
//! log is durable through the epoch its scan ended in. Recovery replays every remaining
//! segment into a map of the keys the log wrote, then streams the newest complete checkpoint
//! in key order and merges the two, keeping per key the write with the highest version (the
//! log's on a tie); a delete is a versioned tombstone that wins only if it is newest. Memory is
//! the log's distinct keys, not the checkpoint's rows.
//! A row read before a concurrent write is overtaken by the logged write; a row read after
//! it already equals it. Segments whose epochs all precede `B` are then deleted, oldest
//! first. Recovery then truncates the log back to the last marker (removing later segments
//! first), so records of an unfinished epoch can never join a later one; each step is safe
//! to redo after a crash, which makes recovery idempotent.
//!
//! # Writing a flush: direct I/O
//!
//! [`FileDir`] writes each flush with one `O_DIRECT` write from a reused block-aligned
//! buffer, padded with zeros to a whole block, then `fdatasync` (module [`direct`]). A
//! buffered write copies the log into newly allocated page-cache pages, and on a two-core
//! machine the logger doing that copy fell behind two workers (see `direct`'s notes). The
//! last partial block is rewritten by the next flush with its bytes unchanged, so a torn
//! write never damages an earlier epoch; recovery reads zeros at the end of the newest
//! segment as its end, and a segment is truncated to its length before the next one starts
//! (and at shutdown). File systems without direct I/O (tmpfs) get buffered appends.
//!
//! # Why fail-stop on an fsync error
//!
//! When `fsync` fails, Linux may already have dropped the dirty pages and cleared the error,
//! so a retry can "succeed" without the data ever reaching the disk (PostgreSQL found this
//! in 2018 and now panics instead). The logger therefore never retries: the first failed
//! write or sync stops it, the durable epoch stops advancing, and [`Logger::check`] reports
//! a sticky [`LogError::Stopped`]; the engine must stop acknowledging and exit. A full disk
//! is such an error too, naming the directory and file, never a panic.
//!
//! # Crates
//!
//! * `crc32fast`: a maintained, SIMD-accelerated CRC-32 (IEEE); per-frame checksums must
//!   not cost more than the copy.
//! * `parking_lot`: small uncontended mutexes for the per-worker slots (each shared with
//!   the logger thread only) and the fault-injecting directory.
//! * `foldhash`: recovery's map of the keys the log wrote (std's SipHash is several times
//!   slower on integer keys).
//! * `serde`, `serde_json`: the manifest.
//! * `libc`: the `O_DIRECT` and `EINVAL` constants for opening a segment for direct I/O (std
//!   has no name for them).
//! * `thiserror` for the error enums; `proptest` and `tempfile` (a real directory that is
//!   removed after the test) only in tests.
//!
//! Random choices in [`FaultyDir`] and the crash tests use splitmix64 written here: a few
//! lines, and it keeps the fault schedule reproducible from one printed seed.

pub mod checkpoint;
pub mod device;
pub mod direct;
pub mod format;
pub mod group;
pub mod logger;
pub mod manifest;
pub mod naming;
pub mod recovery;

pub use checkpoint::{CheckpointWriter, delete_covered};
pub use device::{DeviceError, Dir, FaultyDir, FileDir};
pub use format::{RowRecord, TxRecord, Write, WriteKind};
pub use group::{Flush, GroupCommit, WorkerEpoch};
pub use logger::{Durability, EpochCell, LogConfig, Logger, SegmentWriter, WorkerLog};
pub use manifest::Manifest;
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
    /// A configuration value out of range.
    #[error("invalid log configuration: {field} {reason}")]
    InvalidConfig { field: &'static str, reason: &'static str },
    /// A checkpoint was committed before the log was durable through the epoch its scan
    /// ended in; it could show writes that recovery loses.
    #[error("checkpoint ends in epoch {end_epoch} but the log is durable only through {durable_epoch}; wait for it")]
    CheckpointAhead { end_epoch: u64, durable_epoch: u64 },
    /// A checkpoint's rows must come in increasing `(table, key)` order (recovery merges them
    /// with the log as they stream).
    #[error("checkpoint row ({}, {}) after ({}, {}): rows must come in increasing (table, key) order", next.0, next.1, previous.0, previous.1)]
    CheckpointOrder { previous: (u16, u64), next: (u16, u64) },
    /// A complete checkpoint that cannot be read to its end: the log segments it covered are
    /// deleted, so recovery cannot go on without it.
    #[error("checkpoint {file} in the log directory is damaged at offset {offset}: {reason}")]
    DamagedCheckpoint { file: String, offset: u64, reason: String },
}
