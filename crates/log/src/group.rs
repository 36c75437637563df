//! Group commit by epochs (Silo, SOSP 2013, section 4.9), as an I/O-free state machine.
//!
//! Time is cut into epochs of `epoch_ms`. Each worker publishes the epoch it is working in
//! and appends the encoded redo records of its committed transactions, tagged with that
//! epoch, to its own buffer. Epoch `E` can be made durable once the global epoch has moved
//! past `E` and every worker has left `E` (no record of `E` can still arrive):
//!
//! ```text
//!  now_ms:     0          10          20          30
//!  global:     |--- e1 ---|--- e2 ---|--- e3 ---|
//!  worker A:   t1 t2      |t4            (in e3)
//!  worker B:   t3 ........ t5(still e1) | (moves to e3)
//!  logger:                 closable = min(global-1, min worker - 1)
//!                          at 12: A in e2, B in e1 -> 0: nothing
//!                          at 22: A, B in e3 -> 2: write t1..t5, marker E2, sync,
//!                          publish durable_epoch = 2; t1..t5 are acknowledged
//! ```
//!
//! The core never touches files or clocks: the driver feeds it [`GroupCommit::tick`] with
//! `now_ms`, worker epochs and record bytes, asks [`GroupCommit::poll_flush`] what to write
//! (the workers' buffers in order, then the marker: no copy into one buffer), performs the
//! write and the sync, reports back with [`GroupCommit::flushed`] or [`GroupCommit::failed`],
//! and returns the written buffers with [`GroupCommit::recycle`] for the workers to reuse. After a failure the core is stopped for good (fail-stop): no
//! later epoch is ever published.

use crate::format::{self, Record};

/// A worker's published position: working in an epoch, or idle (holding no epoch back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEpoch {
    In(u64),
    Idle,
}

/// Bytes the driver must append, in order, and sync to make `epoch` durable: the workers'
/// record buffers as they were filled (no copy into one buffer), then the epoch's marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flush {
    pub parts: Vec<Vec<u8>>,
    /// The epoch whose marker ends the last part; durable once the parts are synced.
    pub epoch: u64,
}

impl Flush {
    /// Bytes in all parts.
    pub fn len(&self) -> usize {
        self.parts.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The parts as one buffer (tests).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.parts.concat()
    }
}

/// Emptied record buffers kept for reuse, at most this many per worker: an epoch's buffer
/// grows to megabytes, and a fresh one would be zero-filled by the kernel page by page.
const SPARE_BUFFERS_PER_WORKER: usize = 6;
/// Buffers smaller than this are not kept for reuse.
const SPARE_CAPACITY_MIN: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    /// A flush of this epoch was handed out and not yet confirmed.
    Flushing(u64),
    Failed,
}

/// The group-commit state machine for a fixed set of workers.
#[derive(Debug)]
pub struct GroupCommit {
    epoch_ms: u64,
    global_epoch: u64,
    epoch_started_ms: u64,
    durable_epoch: u64,
    workers: Vec<WorkerEpoch>,
    /// Per worker: encoded records, each tagged with its epoch, in append order.
    buffers: Vec<Vec<(u64, Vec<u8>)>>,
    /// Epochs up to this one are flushed even without records (a waiting checkpoint).
    marker_wanted_epoch: u64,
    phase: Phase,
    /// Written buffers handed back by [`GroupCommit::recycle`], for the workers to refill.
    spares: Vec<Vec<u8>>,
}

impl GroupCommit {
    /// A core for `workers` workers whose durable state ends at `durable_epoch`.
    pub fn new(workers: usize, epoch_ms: u64, durable_epoch: u64, now_ms: u64) -> Self {
        assert!(epoch_ms > 0, "epoch_ms must be positive");
        Self {
            epoch_ms,
            global_epoch: durable_epoch + 1,
            epoch_started_ms: now_ms,
            durable_epoch,
            workers: vec![WorkerEpoch::Idle; workers],
            buffers: vec![Vec::new(); workers],
            marker_wanted_epoch: 0,
            phase: Phase::Idle,
            spares: Vec::new(),
        }
    }

    /// The epoch new transactions are tagged with.
    pub fn global_epoch(&self) -> u64 {
        self.global_epoch
    }

    /// Every transaction of an epoch `<= durable_epoch` is durable.
    pub fn durable_epoch(&self) -> u64 {
        self.durable_epoch
    }

    pub fn has_failed(&self) -> bool {
        self.phase == Phase::Failed
    }

    /// Advances the global epoch if `epoch_ms` has passed since it began.
    pub fn tick(&mut self, now_ms: u64) {
        if now_ms.saturating_sub(self.epoch_started_ms) >= self.epoch_ms {
            self.global_epoch += 1;
            self.epoch_started_ms = now_ms;
        }
    }

    /// Forces the global epoch forward (tests, and a driver closing the log on shutdown).
    pub fn advance_epoch(&mut self, now_ms: u64) {
        self.global_epoch += 1;
        self.epoch_started_ms = now_ms;
    }

    /// Records where a worker is. A worker only moves forward, and never past the global epoch.
    pub fn publish_worker(&mut self, worker: usize, position: WorkerEpoch) {
        if let WorkerEpoch::In(epoch) = position {
            assert!(
                epoch <= self.global_epoch,
                "worker {worker} in epoch {epoch} ahead of global {}",
                self.global_epoch
            );
            if let WorkerEpoch::In(previous) = self.workers[worker] {
                assert!(epoch >= previous, "worker {worker} moved back from epoch {previous} to {epoch}");
            }
        }
        self.workers[worker] = position;
    }

    /// Appends an encoded transaction record of `worker` in the epoch it published.
    pub fn append(&mut self, worker: usize, record: Vec<u8>) {
        let WorkerEpoch::In(epoch) = self.workers[worker] else {
            panic!("worker {worker} appended while idle");
        };
        assert!(epoch > self.durable_epoch, "worker {worker} appended to durable epoch {epoch}");
        self.buffers[worker].push((epoch, record));
    }

    /// The newest epoch no record can still join.
    pub fn closable_epoch(&self) -> u64 {
        let mut closable = self.global_epoch - 1;
        for position in &self.workers {
            if let WorkerEpoch::In(epoch) = position {
                closable = closable.min(epoch - 1);
            }
        }
        closable
    }

    /// The next flush to perform, if an epoch with records can be closed and no flush is in
    /// flight. Closable epochs without records wait for the next flush that has records.
    pub fn poll_flush(&mut self) -> Option<Flush> {
        if self.phase != Phase::Idle {
            return None;
        }
        let epoch = self.closable_epoch();
        if epoch <= self.durable_epoch {
            return None;
        }
        let mut parts = Vec::new();
        for buffer in &mut self.buffers {
            let taken = buffer.iter().take_while(|(record_epoch, _)| *record_epoch <= epoch).count();
            parts.extend(buffer.drain(..taken).map(|(_, record)| record).filter(|record| !record.is_empty()));
        }
        if parts.is_empty() && self.marker_wanted_epoch <= self.durable_epoch {
            // Epochs without records need no I/O (an idle engine does not fsync every
            // epoch_ms). They stay non-durable, so the published durable epoch is always one
            // recovery finds a marker for; the next flush with records covers them.
            return None;
        }
        let mut marker = Vec::new();
        format::encode_record(&Record::EpochClosed { epoch }, &mut marker);
        parts.push(marker);
        self.phase = Phase::Flushing(epoch);
        Some(Flush { parts, epoch })
    }

    /// Takes back a written flush's buffers for reuse (see [`GroupCommit::take_spare`]).
    pub fn recycle(&mut self, flush: Flush) {
        let keep = SPARE_BUFFERS_PER_WORKER * self.workers.len();
        for mut part in flush.parts {
            if self.spares.len() >= keep {
                break;
            }
            if part.capacity() < SPARE_CAPACITY_MIN {
                // An epoch marker's buffer: a worker handed it would regrow it by doubling.
                continue;
            }
            part.clear();
            self.spares.push(part);
        }
    }

    /// An emptied buffer to encode records into, if one was recycled.
    pub fn take_spare(&mut self) -> Option<Vec<u8>> {
        self.spares.pop()
    }

    /// Asks for `epoch` to become durable even if it has no records (a checkpoint waiting
    /// for its end epoch on an idle engine): a marker-only flush is written once it closes.
    pub fn want_durable(&mut self, epoch: u64) {
        self.marker_wanted_epoch = self.marker_wanted_epoch.max(epoch);
    }

    /// The flush of `epoch` was written and synced.
    pub fn flushed(&mut self, epoch: u64) {
        assert_eq!(self.phase, Phase::Flushing(epoch), "confirmed a flush that was not in flight");
        self.durable_epoch = epoch;
        self.phase = Phase::Idle;
    }

    /// A write or sync failed: stop for good.
    pub fn failed(&mut self) {
        self.phase = Phase::Failed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_closes_only_when_every_worker_has_left_it() {
        let mut core = GroupCommit::new(2, 10, 0, 0);
        core.publish_worker(0, WorkerEpoch::In(1));
        core.publish_worker(1, WorkerEpoch::In(1));
        core.append(0, vec![1]);
        core.append(1, vec![2]);
        core.tick(5);
        assert_eq!(core.poll_flush(), None);
        core.tick(10);
        assert_eq!(core.global_epoch(), 2);
        core.publish_worker(0, WorkerEpoch::In(2));
        core.append(0, vec![3]);
        assert_eq!(core.poll_flush(), None, "worker 1 is still in epoch 1");
        core.publish_worker(1, WorkerEpoch::Idle);
        let flush = core.poll_flush().unwrap();
        assert_eq!(flush.epoch, 1);
        assert_eq!(&flush.to_bytes()[..2], &[1, 2], "records of epoch 1 only, then the marker");
        assert_eq!(core.poll_flush(), None, "one flush in flight at a time");
        core.flushed(1);
        assert_eq!(core.durable_epoch(), 1);
    }

    #[test]
    fn empty_epochs_are_not_flushed_but_covered_by_the_next_marker() {
        let mut core = GroupCommit::new(1, 1, 0, 0);
        core.advance_epoch(1);
        core.advance_epoch(2);
        assert_eq!(core.poll_flush(), None);
        assert_eq!(core.durable_epoch(), 0);
        core.publish_worker(0, WorkerEpoch::In(3));
        core.append(0, vec![5]);
        core.advance_epoch(3);
        core.publish_worker(0, WorkerEpoch::Idle);
        let flush = core.poll_flush().unwrap();
        assert_eq!(flush.epoch, 3);
        core.flushed(3);
        assert_eq!(core.durable_epoch(), 3);
        core.advance_epoch(4);
        core.want_durable(4);
        let flush = core.poll_flush().unwrap();
        assert_eq!(flush.epoch, 4, "a marker-only flush when one is wanted");
    }

    #[test]
    fn written_record_buffers_come_back_for_reuse_but_marker_buffers_do_not() {
        let mut core = GroupCommit::new(1, 1, 0, 0);
        core.publish_worker(0, WorkerEpoch::In(1));
        core.append(0, Vec::with_capacity(SPARE_CAPACITY_MIN));
        let mut record = Vec::with_capacity(SPARE_CAPACITY_MIN);
        record.push(7);
        core.append(0, record);
        core.advance_epoch(1);
        core.publish_worker(0, WorkerEpoch::Idle);
        let flush = core.poll_flush().unwrap();
        assert_eq!(flush.parts.len(), 2, "the empty buffer is not written: one record, one marker");
        core.flushed(1);
        core.recycle(flush);
        let spare = core.take_spare().unwrap();
        assert!(spare.is_empty() && spare.capacity() >= SPARE_CAPACITY_MIN, "emptied, capacity kept");
        assert_eq!(core.take_spare(), None, "the marker's small buffer is dropped");
    }

    #[test]
    fn after_a_failure_nothing_more_is_flushed() {
        let mut core = GroupCommit::new(1, 1, 0, 0);
        core.publish_worker(0, WorkerEpoch::In(1));
        core.append(0, vec![9]);
        core.advance_epoch(1);
        core.publish_worker(0, WorkerEpoch::Idle);
        let flush = core.poll_flush().unwrap();
        assert_eq!(flush.epoch, 1);
        core.failed();
        core.advance_epoch(2);
        assert_eq!(core.poll_flush(), None);
        assert_eq!(core.durable_epoch(), 0);
        assert!(core.has_failed());
    }
}
