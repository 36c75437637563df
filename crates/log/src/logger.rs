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
//! slot lock is shared only with the logger, once per tick. The record buffers travel: a
//! worker encodes an epoch's records into one buffer, the flush writes the buffers as they
//! are, and the logger hands emptied buffers back to the slots (an epoch's buffer grows to
//! megabytes; a fresh one would cost the kernel's zero-filling of every page, each epoch).
//! [`Logger::start_manual`] makes the same logger without a thread: a deterministic test
//! runs its rounds with [`Logger::step`] and its own clock.
//!
//! The global epoch lives in an [`EpochCell`] an engine can share ([`Logger::epoch_cell`]),
//! so the epoch a protocol reads at its serialization point is the log's. A worker enters the
//! current epoch before an attempt; a record may then carry a later epoch (the one read at
//! serialization), and appending it moves the worker forward: the epoch it held since entering
//! kept every later epoch open. A read-only commit appends nothing but asks for its epoch
//! ([`WorkerLog::want_durable`]), or an engine running only reads would wait forever.
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
        self.dir.append_synced(&self.current_name, &flush.parts)?;
        self.current_bytes += flush.len() as u64;
        if self.current_bytes >= self.segment_bytes_max {
            // The full segment is cut to its length before the next one exists, so recovery
            // meets padding only in the newest segment.
            self.cut_padding()?;
            // It is never written again: let go of its handle, so that deleting it behind a
            // checkpoint frees its space.
            let full = std::mem::take(&mut self.current_name);
            self.open_segment(flush.epoch + 1)?;
            self.dir.close(&full);
        }
        Ok(())
    }

    /// Cuts the zeros a direct write leaves after the segment's last record, and syncs it.
    fn cut_padding(&mut self) -> Result<(), LogError> {
        self.dir.truncate(&self.current_name, self.current_bytes)?;
        self.dir.sync(&self.current_name)?;
        Ok(())
    }

    /// Leaves the segment exactly as long as what was written (a clean shutdown).
    pub fn finish(&mut self) -> Result<(), LogError> {
        assert!(!self.failed, "SegmentWriter used after a failure");
        let result = self.cut_padding();
        if result.is_err() {
            self.failed = true;
        }
        result
    }
}

/// An epoch number on a cache line of its own: the global epoch is written once per epoch by
/// one thread and read by every worker at every commit, so it must not share a line with
/// anything written more often.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct EpochCell(AtomicU64);

impl EpochCell {
    pub fn new(epoch: u64) -> Self {
        EpochCell(AtomicU64::new(epoch))
    }

    #[inline]
    pub fn load(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    #[inline]
    pub fn store(&self, epoch: u64) {
        self.0.store(epoch, Ordering::Release);
    }

    /// Adds one and returns the new epoch.
    #[inline]
    pub fn advance(&self) -> u64 {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Raises the epoch to at least `epoch`.
    #[inline]
    pub fn raise(&self, epoch: u64) {
        self.0.fetch_max(epoch, Ordering::AcqRel);
    }
}

/// One worker's slot, shared with the logger thread only.
#[derive(Debug)]
struct WorkerSlot {
    position: WorkerEpoch,
    /// Encoded records, one buffer per epoch, oldest first.
    records: Vec<(u64, Vec<u8>)>,
    /// Emptied buffers the logger handed back, for the next epochs.
    spares: Vec<Vec<u8>>,
    /// Bytes of the worker's last completed epoch buffer it saw (a size to reserve).
    last_epoch_bytes: usize,
}

#[derive(Debug)]
struct Shared {
    durability: Durability,
    global_epoch: Arc<EpochCell>,
    durable_epoch: EpochCell,
    stop: AtomicBool,
    /// The logger makes epochs up to this one durable even without records.
    marker_wanted_epoch: AtomicU64,
    /// Per worker: an epoch its read-only commits wait for (they log nothing, so without
    /// asking, an engine running only reads would never see an epoch made durable).
    worker_wanted_epochs: Vec<EpochCell>,
    /// Bytes written to segments so far (a checkpoint policy reads it).
    bytes_written: AtomicU64,
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
    /// The epoch this worker's slot holds it in (0: idle), as the worker last set it (only
    /// the worker writes it; atomic so the handle stays `Sync`).
    entered: AtomicU64,
}

impl WorkerLog {
    /// Enters the current global epoch and returns it: the epoch to tag the next commit with.
    pub fn enter_epoch(&self) -> u64 {
        // Already in the current epoch (the common case: epochs last milliseconds, attempts
        // microseconds): the slot says so, and the logger cannot close it; no lock needed.
        let entered = self.entered.load(Ordering::Relaxed);
        if entered != 0 && entered >= self.shared.global_epoch.load() {
            return entered;
        }
        // Read the global epoch under the slot lock: the logger stores a new global epoch
        // before it inspects the slots, so it either sees this worker's position or the
        // worker sees the new epoch; it never closes an epoch a worker is about to enter.
        let mut slot = self.shared.slots[self.worker].lock();
        let epoch = self.shared.global_epoch.load();
        let current = match slot.position {
            WorkerEpoch::In(current) if current > epoch => current,
            _ => epoch,
        };
        slot.position = WorkerEpoch::In(current);
        self.entered.store(current, Ordering::Relaxed);
        current
    }

    /// Appends a committed transaction's redo record, tagged with the epoch it serialized in.
    ///
    /// `tx.epoch` may be later than the epoch the worker entered (a protocol reads the global
    /// epoch at its serialization point, after the worker entered): the worker's position
    /// moves forward to it. That is safe because the position the worker held since entering
    /// kept every epoch from it onward open, so `tx.epoch` cannot have closed yet.
    pub fn append(&self, tx: &TxRecord) {
        self.append_with(tx.epoch, |bytes| format::encode_transaction(tx, bytes));
    }

    /// Appends a committed transaction's redo record from its parts: `writes` writes that
    /// [`format::encode_write`] encoded into `encoded_writes` (see [`WorkerLog::append`]).
    /// Copies the bytes once; allocates only for the first record of an epoch.
    pub fn append_parts(&self, epoch: u64, commit_ts: Option<u64>, writes: u32, encoded_writes: &[u8]) {
        self.append_with(epoch, |bytes| {
            format::encode_transaction_parts(bytes, epoch, commit_ts, writes, encoded_writes);
        });
    }

    fn append_with(&self, tx_epoch: u64, encode: impl FnOnce(&mut Vec<u8>)) {
        // After a failure nothing can become durable any more: keep no records (memory stays
        // bounded while the engine notices the error and exits).
        if self.shared.durability == Durability::Off || self.shared.failed.load(Ordering::Acquire) {
            return;
        }
        let mut slot = self.shared.slots[self.worker].lock();
        match slot.position {
            WorkerEpoch::In(entered) => assert!(
                entered <= tx_epoch && tx_epoch <= self.shared.global_epoch.load(),
                "worker {} appended a record of epoch {tx_epoch} while in epoch {entered}",
                self.worker
            ),
            WorkerEpoch::Idle => panic!("worker {} appended while idle", self.worker),
        }
        slot.position = WorkerEpoch::In(tx_epoch);
        self.entered.store(tx_epoch, Ordering::Relaxed);
        // One byte buffer per epoch: records of the same epoch are encoded back to back.
        match slot.records.last_mut() {
            Some((epoch, bytes)) if *epoch == tx_epoch => encode(bytes),
            _ => {
                // Sized for what the worker's last epoch held: growing by doubling mid-epoch
                // copies the buffer, and the new pages are zero-filled by the kernel.
                if let Some((_, previous)) = slot.records.last() {
                    slot.last_epoch_bytes = previous.len();
                }
                let mut bytes = slot.spares.pop().unwrap_or_default();
                bytes.reserve(slot.last_epoch_bytes);
                encode(&mut bytes);
                slot.records.push((tx_epoch, bytes));
            }
        }
    }

    /// Declares the worker idle, so it holds no epoch open.
    pub fn idle(&self) {
        self.shared.slots[self.worker].lock().position = WorkerEpoch::Idle;
        self.entered.store(0, Ordering::Relaxed);
    }

    /// Asks that `epoch` become durable even if this worker logged nothing in it (a read-only
    /// commit, acknowledged only once the epoch it read in is durable).
    #[inline]
    pub fn want_durable(&self, epoch: u64) {
        let wanted = &self.shared.worker_wanted_epochs[self.worker];
        // Only this worker writes its cell: a load and a store, no read-modify-write.
        if wanted.load() < epoch {
            wanted.store(epoch);
        }
    }

    /// Whether a commit of `epoch` may be acknowledged now.
    #[inline]
    pub fn acknowledged(&self, epoch: u64) -> bool {
        acknowledged(&self.shared, epoch)
    }

    /// Every transaction of an epoch `<=` this one is durable.
    #[inline]
    pub fn durable_epoch(&self) -> u64 {
        self.shared.durable_epoch.load()
    }

    /// The epoch new commits are tagged with.
    #[inline]
    pub fn global_epoch(&self) -> u64 {
        self.shared.global_epoch.load()
    }

    /// Whether the logger stopped after a failed write or sync (nothing more will become
    /// durable: stop acknowledging).
    #[inline]
    pub fn has_failed(&self) -> bool {
        self.shared.failed.load(Ordering::Acquire)
    }

    /// The sticky error after a failed write or sync.
    pub fn check(&self) -> Result<(), LogError> {
        check(&self.shared)
    }

    /// When this worker's commits are acknowledged.
    pub fn durability(&self) -> Durability {
        self.shared.durability
    }
}

fn acknowledged(shared: &Shared, epoch: u64) -> bool {
    match shared.durability {
        Durability::Off | Durability::Async => true,
        Durability::Sync => shared.durable_epoch.load() >= epoch,
    }
}

fn check(shared: &Shared) -> Result<(), LogError> {
    match &*shared.error.lock() {
        None => Ok(()),
        Some(reason) => Err(LogError::Stopped { durable_epoch: shared.durable_epoch.load(), reason: reason.clone() }),
    }
}

/// The logger thread (or, for deterministic tests, a logger the caller steps) and the handles
/// to it.
pub struct Logger {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// A logger without a thread: [`Logger::step`] runs one round of it.
    manual: Option<Mutex<Box<dyn Round>>>,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logger")
            .field("durability", &self.shared.durability)
            .field("global_epoch", &self.global_epoch())
            .field("durable_epoch", &self.durable_epoch())
            .field("manual", &self.manual.is_some())
            .finish_non_exhaustive()
    }
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
        let (shared, handles, round) = Self::prepare(dir, config, workers, durable_epoch, next_segment)?;
        let thread = match round {
            None => None,
            Some(round) => {
                let shared = Arc::clone(&shared);
                let epoch_ms = config.epoch_ms;
                Some(
                    std::thread::Builder::new()
                        .name("ordo-logger".into())
                        .spawn(move || run(&shared, round, epoch_ms))
                        .map_err(|source| LogError::Stopped {
                            durable_epoch,
                            reason: format!("cannot start the logger thread: {source}"),
                        })?,
                )
            }
        };
        Ok((Self { shared, thread, manual: None }, handles))
    }

    /// A logger without a thread, for deterministic tests: nothing happens until the caller
    /// runs a round with [`Logger::step`], passing the time.
    pub fn start_manual<D: Dir + 'static>(
        dir: D,
        config: &LogConfig,
        workers: usize,
        durable_epoch: u64,
        next_segment: u64,
    ) -> Result<(Self, Vec<WorkerLog>), LogError> {
        let (shared, handles, round) = Self::prepare(dir, config, workers, durable_epoch, next_segment)?;
        Ok((Self { shared, thread: None, manual: round.map(Mutex::new) }, handles))
    }

    fn prepare<D: Dir + 'static>(
        dir: D,
        config: &LogConfig,
        workers: usize,
        durable_epoch: u64,
        next_segment: u64,
    ) -> Result<Prepared, LogError> {
        config.validate()?;
        let shared = Arc::new(Shared {
            durability: config.durability,
            global_epoch: Arc::new(EpochCell::new(durable_epoch + 1)),
            durable_epoch: EpochCell::new(durable_epoch),
            stop: AtomicBool::new(false),
            marker_wanted_epoch: AtomicU64::new(0),
            worker_wanted_epochs: (0..workers).map(|_| EpochCell::new(0)).collect(),
            bytes_written: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            slots: (0..workers)
                .map(|_| {
                    Mutex::new(WorkerSlot {
                        position: WorkerEpoch::Idle,
                        records: Vec::new(),
                        spares: Vec::new(),
                        last_epoch_bytes: 0,
                    })
                })
                .collect(),
        });
        let handles = (0..workers)
            .map(|worker| WorkerLog { worker, shared: Arc::clone(&shared), entered: AtomicU64::new(0) })
            .collect();
        let round: Option<Box<dyn Round>> = if config.durability == Durability::Off {
            None
        } else {
            let writer = SegmentWriter::start(dir, next_segment, durable_epoch, config.segment_bytes_max)?;
            let core = GroupCommit::new(workers, config.epoch_ms, durable_epoch, 0);
            Some(Box::new(Driver { core, writer }))
        };
        Ok((shared, handles, round))
    }

    pub fn durable_epoch(&self) -> u64 {
        self.shared.durable_epoch.load()
    }

    pub fn global_epoch(&self) -> u64 {
        self.shared.global_epoch.load()
    }

    /// The global epoch itself, for an engine whose epoch is the log's (its protocols read it
    /// at their serialization points).
    pub fn epoch_cell(&self) -> Arc<EpochCell> {
        Arc::clone(&self.shared.global_epoch)
    }

    /// Bytes written to segments since the logger started.
    pub fn bytes_written(&self) -> u64 {
        self.shared.bytes_written.load(Ordering::Acquire)
    }

    /// When commits are acknowledged.
    pub fn durability(&self) -> Durability {
        self.shared.durability
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

    /// Whether the logger stopped after a failed write or sync.
    pub fn has_failed(&self) -> bool {
        self.shared.failed.load(Ordering::Acquire)
    }

    /// The sticky error after a failed write or sync.
    pub fn check(&self) -> Result<(), LogError> {
        check(&self.shared)
    }

    /// Runs one round of a manual logger at time `now_ms` (milliseconds since it started,
    /// never decreasing): advances the epoch if its period passed, collects the workers'
    /// records and performs the flush the core asks for. Returns the sticky error once a write
    /// or sync failed. A threaded logger (or one with durability off) does nothing here.
    pub fn step(&self, now_ms: u64) -> Result<(), LogError> {
        if let Some(round) = &self.manual {
            round.lock().round(&self.shared, now_ms, false);
        }
        self.check()
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
        if let Some(round) = self.manual.take()
            && !self.shared.failed.load(Ordering::Acquire)
        {
            round.lock().round(&self.shared, u64::MAX, true);
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

/// What a logger is made of before it runs: the shared state, the workers' handles, and its
/// round (none with durability off).
type Prepared = (Arc<Shared>, Vec<WorkerLog>, Option<Box<dyn Round>>);

/// Emptied record buffers a worker's slot holds for its next epochs.
const SPARES_PER_SLOT: usize = 2;

/// How often the logger wakes up, at most, per epoch.
const TICKS_PER_EPOCH: u64 = 4;

/// One round of the logger: what the thread does every tick, and what a manual logger's
/// [`Logger::step`] does once. Returns whether the logger goes on.
trait Round: Send {
    fn round(&mut self, shared: &Shared, now_ms: u64, stopping: bool) -> bool;
}

/// The group-commit core and the segment writer it drives.
struct Driver<D: Dir> {
    core: GroupCommit,
    writer: SegmentWriter<D>,
}

impl<D: Dir> Round for Driver<D> {
    fn round(&mut self, shared: &Shared, now_ms: u64, stopping: bool) -> bool {
        let core = &mut self.core;
        if core.has_failed() {
            return false;
        }
        core.tick(now_ms);
        core.want_durable(shared.marker_wanted_epoch.load(Ordering::Acquire));
        for wanted in &shared.worker_wanted_epochs {
            core.want_durable(wanted.load());
        }
        shared.global_epoch.store(core.global_epoch());
        for (worker, slot) in shared.slots.iter().enumerate() {
            let mut slot = slot.lock();
            let position = if stopping { WorkerEpoch::Idle } else { slot.position };
            // The buffer of the epoch the worker is still in stays with it: it cannot be
            // flushed before the worker leaves that epoch, and taking it would make the worker
            // start (and grow) another buffer for the same epoch every tick.
            let open = match (position, slot.records.last()) {
                (WorkerEpoch::In(current), Some(&(epoch, _))) if epoch == current => 1,
                _ => 0,
            };
            let closed = slot.records.len() - open;
            for (epoch, bytes) in slot.records.drain(..closed) {
                core.publish_worker(worker, WorkerEpoch::In(epoch));
                core.append(worker, bytes);
            }
            core.publish_worker(worker, position);
            while slot.spares.len() < SPARES_PER_SLOT
                && let Some(spare) = core.take_spare()
            {
                slot.spares.push(spare);
            }
        }
        if stopping {
            // Close the current epoch so everything appended is flushed.
            core.advance_epoch(now_ms);
            shared.global_epoch.store(core.global_epoch());
        }
        while let Some(flush) = core.poll_flush() {
            match self.writer.write(&flush) {
                Ok(()) => {
                    core.flushed(flush.epoch);
                    shared.bytes_written.fetch_add(flush.len() as u64, Ordering::AcqRel);
                    shared.durable_epoch.store(flush.epoch);
                    core.recycle(flush);
                }
                Err(error) => {
                    fail(core, shared, &error);
                    return false;
                }
            }
        }
        if stopping && let Err(error) = self.writer.finish() {
            fail(core, shared, &error);
        }
        !stopping
    }
}

/// Stops the logger for good after a failed write or sync: the error is kept for
/// [`Logger::check`], and workers stop buffering records.
fn fail(core: &mut GroupCommit, shared: &Shared, error: &LogError) {
    core.failed();
    *shared.error.lock() = Some(error.to_string());
    shared.failed.store(true, Ordering::Release);
    for slot in &shared.slots {
        slot.lock().records.clear();
    }
}

fn run(shared: &Shared, mut round: Box<dyn Round>, epoch_ms: u64) {
    let started = Instant::now();
    let tick = Duration::from_millis(epoch_ms.div_ceil(TICKS_PER_EPOCH).max(1));
    loop {
        let stopping = shared.stop.load(Ordering::Acquire);
        let now_ms = started.elapsed().as_millis() as u64;
        if !round.round(shared, now_ms, stopping) {
            return;
        }
        std::thread::sleep(tick);
    }
}
