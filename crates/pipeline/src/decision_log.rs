//! The validator's write-ahead log: every commit decision, with its timestamp and the values
//! it writes, is logged, and a decision reaches its processor (and so its client and storage)
//! only once it is durable. The commit order survives a crash, and storage is rebuilt from the
//! directory's checkpoint plus this log (issue 17; the log is `ordo-log`, as for the
//! thread-per-worker engine).
//!
//! ```text
//!   processor ──Validate(reads, write keys and values)──> Validator (unchanged)
//!                                                             │ Decide{Commit(ts) | Abort}
//!                                      LoggedValidator <──────┘ (its outbox, intercepted)
//!                                        │ commit: record (epoch, ts, writes: key, version ts, [value])
//!                                        │ every decision: held, in order, with the epoch
//!                                        ▼
//!        logger thread: group commit by epochs, fsync  ──> durable epoch E
//!        held decisions of epochs <= E ──> processors ──> storage writes, clients told
//! ```
//!
//! Decisions are held in the order the validator made them, aborts too, so a processor still
//! sees a batch's commits before its aborts. Storage receives only writes whose decisions are
//! durable, so nothing a crash loses was ever read. Because the validator assigns timestamps
//! in order and logs them in that order, a whole number of epochs is a prefix of the commit
//! order.
//!
//! Starting on a directory: without a checkpoint, the workload's initial values are written
//! as the first checkpoint (every key at version 0); with one, recovery returns each key's
//! newest `(version, value)`, storage partitions and the validator's per-key last-write cache
//! are set from it, and timestamps resume after the highest version. Fail-stop: after a failed
//! write or fsync the held decisions are never released and the run reports the log's error
//! through [`Counters::fail`](crate::client::Counters::fail).
//!
//! Checkpoints while it runs: storage partitions live on their own threads, with no point to
//! read them from outside, but the validator sees every commit's writes in commit order, so it
//! keeps each key's newest `(version, value)` as logged and, after every
//! `checkpoint_log_bytes` of log, writes a fuzzy checkpoint from that copy, a slice of rows per
//! step, committed once the log is durable through the epoch its scan ended in; the segments
//! it covers are then deleted, so the directory stays bounded however long the run.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use ordo_log::manifest::{MANIFEST_FORMAT, Manifest, ManifestColumn, ManifestTable};
use ordo_log::{
    CheckpointWriter, Dir, Durability, FileDir, LogConfig, LogError, Logger, WorkerLog, WriteKind, format, naming,
};
use ordo_workload::Workload;

use crate::client::Counters;
use crate::component::{Context, Deadline};
use crate::config::ConfigError;
use crate::message::{Decision, Envelope, Message};
use crate::node::Node;
use crate::storage::StoragePartition;
use crate::validator::Validator;

/// Segments rotate at about this size, or at a quarter of the checkpoint interval if that is
/// smaller (so that a checkpoint lets most of the log go).
const SEGMENT_BYTES_MAX: u64 = 64 << 20;
const SEGMENT_BYTES_MIN: u64 = 4 << 10;
/// Log written between two checkpoints unless the configuration says: as the thread engine's.
pub const CHECKPOINT_LOG_BYTES_DEFAULT: u64 = 1 << 30;
/// Rows a checkpoint writes per step of the validator, so that a step stays short.
const CHECKPOINT_ROWS_PER_STEP: u64 = 1 << 14;
/// How often a validator holding decisions wants a tick, per epoch.
const TICKS_PER_EPOCH: u64 = 4;

/// Where and how the validator logs.
#[derive(Debug, Clone)]
pub struct DecisionLogConfig {
    /// The log directory (names it in messages; opened unless `device` is given).
    pub dir: PathBuf,
    /// A directory of the caller's instead (tests pass a fault-injecting one).
    pub device: Option<Arc<dyn Dir>>,
    /// `Async`: decisions are logged but released at once; `Sync`: released when durable.
    pub durability: Durability,
    pub epoch_ms: u64,
    /// Step the logger from the validator's ticks in the component's time (the deterministic
    /// simulation) instead of running its thread.
    pub manual: bool,
    /// A checkpoint starts once this much log was written since the last one began (the
    /// segments it covers are then deleted, so disk use stays bounded).
    pub checkpoint_log_bytes: u64,
}

/// Two configurations are the same when they log alike into the same directory, through the
/// same device (the same `Arc`) if one was given.
impl PartialEq for DecisionLogConfig {
    fn eq(&self, other: &Self) -> bool {
        let same_device = match (&self.device, &other.device) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        self.dir == other.dir
            && same_device
            && self.durability == other.durability
            && self.epoch_ms == other.epoch_ms
            && self.manual == other.manual
            && self.checkpoint_log_bytes == other.checkpoint_log_bytes
    }
}

/// The validator with its decisions logged before they are released.
#[derive(Debug)]
pub struct LoggedValidator {
    validator: Validator,
    logger: Logger,
    log: WorkerLog,
    config: DecisionLogConfig,
    counters: Arc<Counters>,
    /// Decisions not released yet, each with the epoch its record joined, oldest first.
    held: VecDeque<(u64, Envelope)>,
    outbox: Vec<Envelope>,
    /// One commit's writes, encoded (reused).
    writes: Vec<u8>,
    failed: bool,
    /// Each key's newest `(version, value)` as logged: what a checkpoint writes.
    rows: Vec<(u64, i64)>,
    dir: Arc<dyn Dir>,
    /// The checkpoint being written, a slice of rows per step.
    checkpoint: Option<RunningCheckpoint>,
    /// Log bytes written when the last checkpoint began.
    checkpoint_log_mark: u64,
}

/// A fuzzy checkpoint in progress: rows are read from the live `rows` while commits go on
/// (recovery keeps each key's highest version, so a row may show a write of any epoch at or
/// after `begin`); it is committed once the log is durable through the epoch its scan ended in.
#[derive(Debug)]
struct RunningCheckpoint {
    writer: CheckpointWriter<Arc<dyn Dir>>,
    next_key: u64,
    /// Set when every row is written: the scan's last epoch, which must be durable first.
    end_epoch: Option<u64>,
}

impl LoggedValidator {
    pub fn handle(&mut self, message: Message, ctx: &mut Context) {
        let mut inner =
            Context { now_us: ctx.now_us, out: &mut self.outbox, recorder: &mut *ctx.recorder, history: None };
        self.validator.handle(message, &mut inner);
        self.route(ctx);
    }

    /// Sets the validator's batch cap (the batch-size controller's choice).
    pub fn set_batch_size(&mut self, batch_size: usize) {
        self.validator.set_batch_size(batch_size);
    }

    /// Closes the validator's partial batches, and releases the decisions the log made
    /// durable; wants another tick while decisions are held.
    pub fn tick(&mut self, ctx: &mut Context, queued: bool) -> Deadline {
        let mut inner =
            Context { now_us: ctx.now_us, out: &mut self.outbox, recorder: &mut *ctx.recorder, history: None };
        let deadline = self.validator.tick(&mut inner, queued);
        self.route(ctx);
        if (self.held.is_empty() && self.checkpoint.is_none()) || self.failed {
            return deadline;
        }
        let poll_us = (self.config.epoch_ms * 1000 / TICKS_PER_EPOCH).max(1);
        let wake = ctx.now_us + poll_us;
        Some(deadline.map_or(wake, |deadline| deadline.min(wake)))
    }

    /// Logs the commits among the validator's new messages, holds every decision, passes the
    /// rest on, and releases what is durable.
    fn route(&mut self, ctx: &mut Context) {
        if self.failed {
            // Fail-stop: nothing more is decided in public.
            self.outbox.clear();
            return;
        }
        if self.outbox.iter().any(|envelope| matches!(envelope.message, Message::Decide { .. })) {
            let epoch = self.log.enter_epoch();
            for envelope in self.outbox.drain(..) {
                match &envelope.message {
                    Message::Decide { decision, request } => {
                        if let Decision::Commit(ts) = *decision {
                            self.writes.clear();
                            for (&key, &value) in request.writes.iter().zip(&request.values) {
                                format::encode_write(&mut self.writes, 0, WriteKind::Put, key, ts, &[value as u64]);
                                self.rows[key as usize] = (ts, value);
                            }
                            self.log.append_parts(epoch, Some(ts), request.writes.len() as u32, &self.writes);
                        }
                        self.held.push_back((epoch, envelope));
                    }
                    _ => ctx.out.push(envelope),
                }
            }
            self.log.idle();
        } else {
            ctx.out.append(&mut self.outbox);
        }
        self.release(ctx);
    }

    fn release(&mut self, ctx: &mut Context) {
        if self.config.manual {
            let _ = self.logger.step(ctx.now_us / 1000);
        }
        if let Err(error) = self.logger.check().and_then(|()| self.step_checkpoint()) {
            self.failed = true;
            self.counters.fail(error.to_string());
            return;
        }
        let limit = match self.config.durability {
            Durability::Sync => self.logger.durable_epoch(),
            Durability::Async | Durability::Off => u64::MAX,
        };
        while let Some((epoch, _)) = self.held.front()
            && *epoch <= limit
        {
            let (_, envelope) = self.held.pop_front().expect("front exists");
            ctx.out.push(envelope);
        }
    }
}

impl LoggedValidator {
    /// Begins a checkpoint once enough log was written since the last one, writes the next
    /// slice of rows of the one in progress, and commits it once the log is durable through
    /// the epoch its scan ended in (deleting the segments it covers).
    fn step_checkpoint(&mut self) -> Result<(), LogError> {
        let written = self.logger.bytes_written();
        let Some(running) = &mut self.checkpoint else {
            if written.saturating_sub(self.checkpoint_log_mark) >= self.config.checkpoint_log_bytes {
                // Every decision of an epoch before the global one is already in `rows`.
                let begin = self.logger.global_epoch();
                let writer = CheckpointWriter::begin(Arc::clone(&self.dir), begin)?;
                self.checkpoint = Some(RunningCheckpoint { writer, next_key: 0, end_epoch: None });
                self.checkpoint_log_mark = written;
            }
            return Ok(());
        };
        if running.end_epoch.is_none() {
            let keys = self.rows.len() as u64;
            let end = (running.next_key + CHECKPOINT_ROWS_PER_STEP).min(keys);
            for key in running.next_key..end {
                let (version, value) = self.rows[key as usize];
                running.writer.row_words(0, key, version, &[value as u64])?;
            }
            running.next_key = end;
            if end == keys {
                // Rows may show commits of epochs up to the current one: make it durable.
                let end_epoch = self.logger.global_epoch();
                self.logger.want_durable(end_epoch);
                running.end_epoch = Some(end_epoch);
            }
        }
        if let Some(end_epoch) = running.end_epoch
            && self.logger.durable_epoch() >= end_epoch
        {
            let running = self.checkpoint.take().expect("matched above");
            running.writer.finish(end_epoch, self.logger.durable_epoch())?;
        }
        Ok(())
    }
}

/// The manifest of a key-value workload's store as the validator logs it: one table `kv` of
/// one word, the value.
fn manifest(workload: &dyn Workload) -> Manifest {
    Manifest {
        format: MANIFEST_FORMAT,
        workload: workload.name().to_owned(),
        tables: vec![ManifestTable {
            name: "kv".into(),
            row_words: 1,
            columns: vec![ManifestColumn { name: "value".into(), ty: "int".into(), bytes: None, word: 0 }],
            dense_keys: Some(workload.key_count()),
            index_of: None,
        }],
    }
}

/// Opens the log directory for `nodes` (built for `workload`): recovers storage and the
/// validator from it, or writes the initial values as its first checkpoint; then replaces
/// the validator with a [`LoggedValidator`].
pub fn attach(
    nodes: &mut Vec<(crate::message::Address, Node)>,
    config: &DecisionLogConfig,
    workload: &dyn Workload,
    counters: &Arc<Counters>,
) -> Result<(), ConfigError> {
    let problem =
        |reason: String| ConfigError::Invalid { field: "wal", reason: format!("{}: {reason}", config.dir.display()) };
    if config.durability == Durability::Off {
        return Err(problem("durability off logs nothing".into()));
    }
    let dir: Arc<dyn Dir> = match &config.device {
        Some(device) => Arc::clone(device),
        None => Arc::new(FileDir::open(&config.dir).map_err(|e| problem(e.to_string()))?),
    };
    let wanted = manifest(workload);
    let names = dir.list().map_err(|e| problem(e.to_string()))?;
    let files: Vec<naming::LogFile> = names.iter().filter_map(|name| naming::parse(name)).collect();
    let has_checkpoint = files.iter().any(|file| matches!(file, naming::LogFile::Checkpoint { .. }));
    match Manifest::read(&*dir).map_err(&problem)? {
        Some(found) => {
            if let Some(reason) = found.mismatch(&wanted) {
                return Err(problem(format!("cannot run {} here: {reason}", workload.name())));
            }
        }
        None if !files.is_empty() => return Err(problem("it holds log files but no manifest".into())),
        None => wanted.write(&*dir).map_err(|e| problem(e.to_string()))?,
    }
    let mut rows: Vec<(u64, i64)> = (0..workload.key_count()).map(|key| (0, workload.initial_value(key))).collect();
    let (durable_epoch, next_segment) = if has_checkpoint {
        let mut restored = Vec::new();
        let recovered = ordo_log::recover(&*dir, |row| {
            restored.push((row.key, row.version, row.row.first().copied().unwrap_or(0) as i64));
        })
        .map_err(|e| problem(e.to_string()))?;
        restore(nodes, &restored, workload.key_count()).map_err(&problem)?;
        for &(key, version, value) in &restored {
            rows[key as usize] = (version, value);
        }
        // Timestamps resume after the last logged commit, writes or not.
        if let Some(ts) = recovered.commit_ts_max
            && let Some((_, Node::Validator(validator))) =
                nodes.iter_mut().find(|(_, node)| matches!(node, Node::Validator(_)))
        {
            validator.resume_after(ts);
        }
        (recovered.durable_epoch, recovered.next_segment)
    } else {
        if !files.is_empty() {
            return Err(problem("it holds log segments but no checkpoint".into()));
        }
        let mut checkpoint = CheckpointWriter::begin(&*dir, 1).map_err(|e| problem(e.to_string()))?;
        for (key, &(_, value)) in rows.iter().enumerate() {
            checkpoint.row_words(0, key as u64, 0, &[value as u64]).map_err(|e| problem(e.to_string()))?;
        }
        checkpoint.finish(0, 0).map_err(|e| problem(e.to_string()))?;
        (0, 0)
    };
    let segment_bytes_max = (config.checkpoint_log_bytes / 4).clamp(SEGMENT_BYTES_MIN, SEGMENT_BYTES_MAX);
    let log_config = LogConfig { durability: config.durability, epoch_ms: config.epoch_ms, segment_bytes_max };
    let start = if config.manual { Logger::start_manual } else { Logger::start };
    let (logger, mut logs) =
        start(Arc::clone(&dir), &log_config, 1, durable_epoch, next_segment).map_err(|e| problem(e.to_string()))?;
    let log = logs.pop().expect("one worker's log");
    let index = nodes
        .iter()
        .position(|(_, node)| matches!(node, Node::Validator(_)))
        .ok_or_else(|| problem("the pipeline has no validator".into()))?;
    let (address, Node::Validator(validator)) = nodes.remove(index) else { unreachable!("found above") };
    let logged = LoggedValidator {
        validator,
        logger,
        log,
        config: config.clone(),
        counters: Arc::clone(counters),
        held: VecDeque::new(),
        outbox: Vec::new(),
        writes: Vec::new(),
        failed: false,
        rows,
        dir,
        checkpoint: None,
        checkpoint_log_mark: 0,
    };
    nodes.insert(index, (address, Node::LoggedValidator(Box::new(logged))));
    Ok(())
}

/// Sets storage and the validator's cache from recovered `(key, version, value)`s.
fn restore(nodes: &mut [(crate::message::Address, Node)], rows: &[(u64, u64, i64)], keys: u64) -> Result<(), String> {
    if let Some(&(key, _, _)) = rows.iter().find(|(key, _, _)| *key >= keys) {
        return Err(format!("it holds key {key}, but the workload has {keys} keys"));
    }
    for (_, node) in nodes.iter_mut() {
        match node {
            Node::Storage(partition) => restore_partition(partition, rows),
            Node::Validator(validator) => {
                for &(key, version, _) in rows {
                    validator.restore(key, version);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn restore_partition(partition: &mut StoragePartition, rows: &[(u64, u64, i64)]) {
    for &(key, version, value) in rows {
        if partition.owns(key) {
            partition.restore(key, value, version);
        }
    }
}
