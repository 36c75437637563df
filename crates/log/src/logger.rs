//! The thin driver: segment files over a [`Dir`], and a logger thread running the
//! group-commit core.
//!
//! [`SegmentWriter`] appends each [`Flush`] to the current segment, syncs it, and rotates to
//! a new segment (header written, file synced, directory synced) at an epoch boundary once
//! the segment passes `segment_bytes_max`. It is deterministic and single-threaded, so the
//! crash tests drive it directly.
//!
//! [`Logger`] owns a thread that every tick advances the epoch, drains the per-worker slots
//! into the core and performs the flush the core asks for. Workers hold a [`WorkerLog`] whose
//! slot lock is shared only with the logger, once per tick.
//!
//! Fail-stop: the first failed append or sync stops the logger for good. The durable epoch
//! stops advancing, [`Logger::check`] returns the sticky [`LogError::Stopped`], and the engine
//! must stop acknowledging and exit. The logger never retries a failed sync: after a failed
//! `fsync` the kernel may have dropped the dirty pages and cleared the error, so a retry that
//! "succeeds" proves nothing (PostgreSQL, 2018).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::LogError;
use crate::device::Dir;
use crate::format::{self, FileHeader, FileKind, TxRecord};
use crate::group::{Flush, GroupCommit, WorkerEpoch};
use crate::naming;

/// When a transaction is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Nothing is logged; acknowledged at once.
    Off,
    /// Logged and synced by the logger, but acknowledged before the sync.
    Async,
    /// Acknowledged only once its epoch is durable.
    #[default]
    Sync,
}

/// Configuration of the logger.
#[derive(Debug, Clone)]
pub struct LogConfig {
    pub durability: Durability,
    /// The group-commit interval.
    pub epoch_ms: u64,
    /// A segment is rotated at the first epoch boundary after it grows past this size.
    pub segment_bytes_max: u64,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self { durability: Durability::Sync, epoch_ms: 10, segment_bytes_max: 64 << 20 }
    }
}

impl LogConfig {
    /// Checks the ranges before anything runs.
    pub fn validate(&self) -> Result<(), LogError> {
        if self.epoch_ms == 0 {
            return Err(LogError::InvalidConfig { field: "epoch_ms", reason: "must be at least 1" });
        }
        if self.segment_bytes_max < format::HEADER_LEN as u64 {
            return Err(LogError::InvalidConfig { field: "segment_bytes_max", reason: "must hold at least a header" });
        }
        Ok(())
    }
}

/// Appends flushes to segment files, rotating them at epoch boundaries.
#[derive(Debug)]
pub struct SegmentWriter<D: Dir> {
    dir: D,
    segment_bytes_max: u64,
    current_name: String,
    current_bytes: u64,
    next_segment: u64,
    failed: bool,
}

impl<D: Dir> SegmentWriter<D> {
    /// Starts a new segment numbered `next_segment` (from recovery) for epochs after
    /// `durable_epoch`.
    pub fn start(dir: D, next_segment: u64, durable_epoch: u64, segment_bytes_max: u64) -> Result<Self, LogError> {
        let mut writer =
            Self { dir, segment_bytes_max, current_name: String::new(), current_bytes: 0, next_segment, failed: false };
        writer.open_segment(durable_epoch + 1)?;
        Ok(writer)
    }

    pub fn dir(&self) -> &D {
        &self.dir
    }

    fn open_segment(&mut self, first_epoch: u64) -> Result<(), LogError> {
        let number = self.next_segment;
        let name = naming::segment_name(number);
        let mut header = Vec::new();
        format::encode_header(&FileHeader { kind: FileKind::Segment, number, first_epoch }, &mut header);
        self.dir.create(&name)?;
        self.dir.append(&name, &header)?;
        self.dir.sync(&name)?;
        self.dir.sync_dir()?;
        self.next_segment += 1;
        self.current_name = name;
        self.current_bytes = header.len() as u64;
        Ok(())
    }

    /// Writes and syncs one flush; on success its epoch is durable. Any error is final.
    pub fn write(&mut self, flush: &Flush) -> Result<(), LogError> {
        assert!(!self.failed, "SegmentWriter used after a failure");
        let result = self.write_inner(flush);
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn write_inner(&mut self, flush: &Flush) -> Result<(), LogError> {
        self.dir.append(&self.current_name, &flush.bytes)?;
        self.dir.sync(&self.current_name)?;
        self.current_bytes += flush.bytes.len() as u64;
        if self.current_bytes >= self.segment_bytes_max {
            self.open_segment(flush.epoch + 1)?;
        }
        Ok(())
    }
}

/// One worker's slot, shared with the logger thread only.
#[derive(Debug)]
struct WorkerSlot {
    position: WorkerEpoch,
    /// Encoded records, one buffer per epoch, oldest first.
    records: Vec<(u64, Vec<u8>)>,
}

#[derive(Debug)]
struct Shared {
    durability: Durability,
    global_epoch: AtomicU64,
    durable_epoch: AtomicU64,
    stop: AtomicBool,
    /// The logger makes epochs up to this one durable even without records.
    marker_wanted_epoch: AtomicU64,
    /// Set once the logger stopped after an error; workers then stop buffering records.
    failed: AtomicBool,
    error: Mutex<Option<String>>,
    slots: Vec<Mutex<WorkerSlot>>,
}

/// A worker's handle to the log.
#[derive(Debug)]
pub struct WorkerLog {
    worker: usize,
    shared: Arc<Shared>,
}

impl WorkerLog {
    /// Enters the current global epoch and returns it: the epoch to tag the next commit with.
    pub fn enter_epoch(&self) -> u64 {
        // Read the global epoch under the slot lock: the logger stores a new global epoch
        // before it inspects the slots, so it either sees this worker's position or the
        // worker sees the new epoch; it never closes an epoch a worker is about to enter.
        let mut slot = self.shared.slots[self.worker].lock();
        let epoch = self.shared.global_epoch.load(Ordering::Acquire);
        slot.position = match slot.position {
            WorkerEpoch::In(current) if current > epoch => WorkerEpoch::In(current),
            _ => WorkerEpoch::In(epoch),
        };
        match slot.position {
            WorkerEpoch::In(current) => current,
            WorkerEpoch::Idle => unreachable!("set above"),
        }
    }

    /// Appends a committed transaction's redo record. `tx.epoch` must be the epoch returned
    /// by the last [`WorkerLog::enter_epoch`].
    pub fn append(&self, tx: &TxRecord) {
        // After a failure nothing can become durable any more: keep no records (memory stays
        // bounded while the engine notices the error and exits).
        if self.shared.durability == Durability::Off || self.shared.failed.load(Ordering::Acquire) {
            return;
        }
        let mut slot = self.shared.slots[self.worker].lock();
        assert_eq!(slot.position, WorkerEpoch::In(tx.epoch), "append outside the worker's epoch");
        // One byte buffer per epoch: records of the same epoch are encoded back to back.
        match slot.records.last_mut() {
            Some((epoch, bytes)) if *epoch == tx.epoch => format::encode_transaction(tx, bytes),
            _ => {
                let mut bytes = Vec::new();
                format::encode_transaction(tx, &mut bytes);
                slot.records.push((tx.epoch, bytes));
            }
        }
    }

    /// Declares the worker idle, so it holds no epoch open.
    pub fn idle(&self) {
        self.shared.slots[self.worker].lock().position = WorkerEpoch::Idle;
    }

    /// Whether a commit of `epoch` may be acknowledged now.
    pub fn acknowledged(&self, epoch: u64) -> bool {
        acknowledged(&self.shared, epoch)
    }
}

fn acknowledged(shared: &Shared, epoch: u64) -> bool {
    match shared.durability {
        Durability::Off | Durability::Async => true,
        Durability::Sync => shared.durable_epoch.load(Ordering::Acquire) >= epoch,
    }
}

/// The logger thread and the handles to it.
#[derive(Debug)]
pub struct Logger {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Logger {
    /// Starts a logger for `workers` workers over `dir`, resuming after recovery's
    /// `durable_epoch` in segment `next_segment`.
    pub fn start<D: Dir + 'static>(
        dir: D,
        config: &LogConfig,
        workers: usize,
        durable_epoch: u64,
        next_segment: u64,
    ) -> Result<(Self, Vec<WorkerLog>), LogError> {
        config.validate()?;
        let shared = Arc::new(Shared {
            durability: config.durability,
            global_epoch: AtomicU64::new(durable_epoch + 1),
            durable_epoch: AtomicU64::new(durable_epoch),
            stop: AtomicBool::new(false),
            marker_wanted_epoch: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            slots: (0..workers)
                .map(|_| Mutex::new(WorkerSlot { position: WorkerEpoch::Idle, records: Vec::new() }))
                .collect(),
        });
        let handles = (0..workers).map(|worker| WorkerLog { worker, shared: Arc::clone(&shared) }).collect();
        let thread = if config.durability == Durability::Off {
            None
        } else {
            let writer = SegmentWriter::start(dir, next_segment, durable_epoch, config.segment_bytes_max)?;
            let core = GroupCommit::new(workers, config.epoch_ms, durable_epoch, 0);
            let shared = Arc::clone(&shared);
            let epoch_ms = config.epoch_ms;
            Some(
                std::thread::Builder::new()
                    .name("ordo-logger".into())
                    .spawn(move || run(&shared, core, writer, epoch_ms))
                    .map_err(|source| LogError::Stopped {
                        durable_epoch,
                        reason: format!("cannot start the logger thread: {source}"),
                    })?,
            )
        };
        Ok((Self { shared, thread }, handles))
    }

    pub fn durable_epoch(&self) -> u64 {
        self.shared.durable_epoch.load(Ordering::Acquire)
    }

    pub fn global_epoch(&self) -> u64 {
        self.shared.global_epoch.load(Ordering::Acquire)
    }

    /// Whether a commit of `epoch` may be acknowledged now.
    pub fn acknowledged(&self, epoch: u64) -> bool {
        acknowledged(&self.shared, epoch)
    }

    /// Asks that `epoch` become durable even if no transaction commits in it (a checkpoint
    /// waiting for its end epoch while the engine is idle).
    pub fn want_durable(&self, epoch: u64) {
        self.shared.marker_wanted_epoch.fetch_max(epoch, Ordering::AcqRel);
    }

    /// The sticky error after a failed write or sync.
    pub fn check(&self) -> Result<(), LogError> {
        match &*self.shared.error.lock() {
            None => Ok(()),
            Some(reason) => Err(LogError::Stopped { durable_epoch: self.durable_epoch(), reason: reason.clone() }),
        }
    }

    /// Makes every appended record durable (workers must be idle), then stops the thread.
    pub fn shutdown(mut self) -> Result<u64, LogError> {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.join().map_err(|_| LogError::Stopped {
                durable_epoch: self.durable_epoch(),
                reason: "the logger thread panicked".to_string(),
            })?;
        }
        self.check()?;
        Ok(self.durable_epoch())
    }
}

impl Drop for Logger {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How often the logger wakes up, at most, per epoch.
const TICKS_PER_EPOCH: u64 = 4;

fn run<D: Dir>(shared: &Shared, mut core: GroupCommit, mut writer: SegmentWriter<D>, epoch_ms: u64) {
    let started = Instant::now();
    let tick = Duration::from_millis(epoch_ms.div_ceil(TICKS_PER_EPOCH).max(1));
    loop {
        let stopping = shared.stop.load(Ordering::Acquire);
        let now_ms = started.elapsed().as_millis() as u64;
        core.tick(now_ms);
        core.want_durable(shared.marker_wanted_epoch.load(Ordering::Acquire));
        shared.global_epoch.store(core.global_epoch(), Ordering::Release);
        for (worker, slot) in shared.slots.iter().enumerate() {
            let mut slot = slot.lock();
            for (epoch, bytes) in slot.records.drain(..) {
                core.publish_worker(worker, WorkerEpoch::In(epoch));
                core.append(worker, bytes);
            }
            let position = if stopping { WorkerEpoch::Idle } else { slot.position };
            core.publish_worker(worker, position);
        }
        if stopping {
            // Close the current epoch so everything appended is flushed.
            core.advance_epoch(now_ms);
        }
        while let Some(flush) = core.poll_flush() {
            shared.durable_epoch.store(core.durable_epoch(), Ordering::Release);
            match writer.write(&flush) {
                Ok(()) => {
                    core.flushed(flush.epoch);
                    shared.durable_epoch.store(flush.epoch, Ordering::Release);
                }
                Err(error) => {
                    core.failed();
                    *shared.error.lock() = Some(error.to_string());
                    shared.failed.store(true, Ordering::Release);
                    for slot in &shared.slots {
                        slot.lock().records.clear();
                    }
                    return;
                }
            }
        }
        shared.durable_epoch.store(core.durable_epoch(), Ordering::Release);
        if stopping {
            return;
        }
        std::thread::sleep(tick);
    }
}
