//! Multi-version concurrency control: snapshot isolation (`mvcc_si`, first committer wins, the
//! guarantee of ERMIA-SI) and serializable snapshot isolation by ERMIA's Serial Safety Net
//! (`ssi`, Wang et al., "Efficiently making (almost) any concurrency control mechanism
//! serializable", VLDB Journal 2017).
//!
//! ## Versions
//!
//! Every record keeps a fixed number of versions (`versions`, default 4) in a ring, like the
//! fixed version count of fastPSI: installing a version recycles the oldest slot, so memory is
//! bounded whatever the run length, and a reader whose snapshot needs a recycled version aborts
//! ("snapshot too old"). That is the garbage collector: nothing to scan, nothing to free.
//!
//! ```text
//!   heads[k]:  [ lock:1 | versions installed:63 ]      a dense array of its own, so the
//!                                                       hot lookup stays in cache
//!   record k:  [ slot 0: cstamp | pstamp | sstamp | value | seq | payload ... ]
//!              [ slot 1: ... ]   ...   newest = slot (installed - 1) mod versions
//! ```
//!
//! Slots are seqlocks on `cstamp` (0 while being rewritten). A transaction reads the clock as
//! its snapshot `S` at begin and reads, for each key, the newest version with `cstamp <= S`.
//! A committer locks the heads of its write set (in key order), checks that no version newer
//! than `S` was committed (first committer wins), takes `cstamp` from the clock, installs and
//! unlocks. Because the locks are taken before the clock is read, every committer with
//! `cstamp <= S` still holds its locks when a reader with snapshot `S` looks, and the reader
//! waits for it: snapshots are consistent.
//!
//! ## The Serial Safety Net
//!
//! SSN keeps, per version, `pstamp` (the latest commit stamp of a transaction that read it)
//! and `sstamp` (the `π` of the transaction that overwrote it, ∞ until then). At commit a
//! transaction `T` computes
//!
//! ```text
//!   η(T) = max( cstamp of every version T read,  pstamp of every version T overwrote )
//!   π(T) = min( cstamp(T),  sstamp of every version T read that is already overwritten )
//! ```
//!
//! and aborts when `π(T) <= η(T)`: its "exclusion window" is violated, the only way it could
//! close a dependency cycle. Otherwise it stamps what it read (`pstamp`) and overwrote
//! (`sstamp = π(T)`). ERMIA computes this latch-free with in-flight reader bitmaps; ordo runs
//! the (short, fixed-size) stamp computation and installation of each commit under one global
//! latch, which gives every commit a consistent view of all stamps at the price of serialized
//! commit phases. Reads stay concurrent and latch-free.

use std::sync::atomic::{AtomicU64, Ordering, fence};

use ordo_history::HistoryEntry;
use ordo_storage::prefetch;
use ordo_workload::{Key, Value, Workload};
use parking_lot::Mutex;

use crate::kit::{self, LOCK};
use crate::protocol::{Abort, Protocol, Recording, Spin, WriteSet};
use crate::store::{LINE_WORDS, Lines, parallel_for, payload_word, payload_words};

/// Versions kept per record unless configured otherwise.
pub const VERSIONS_DEFAULT: usize = 4;

const INFINITY: u64 = u64::MAX;

const CSTAMP: usize = 0;
const PSTAMP: usize = 1;
const SSTAMP: usize = 2;
const VALUE: usize = 3;
const SEQ: usize = 4;
const PAYLOAD: usize = 5;

/// Which guarantee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    Snapshot,
    SerialSafetyNet,
}

/// MVCC over bounded version rings.
#[derive(Debug)]
pub struct Mvcc {
    heads: Vec<AtomicU64>,
    lines: Lines,
    stride: usize,
    slot_words: usize,
    versions: u64,
    payload_words: usize,
    clock: AtomicU64,
    isolation: Isolation,
    /// SSN's commit latch.
    latch: Mutex<()>,
}

#[derive(Debug, Clone, Copy)]
struct ReadVersion {
    key: Key,
    slot: u64,
    cstamp: u64,
}

#[derive(Debug)]
pub struct MvccWorker {
    snapshot: u64,
    reads: Vec<ReadVersion>,
    writes: WriteSet,
    locked: usize,
    payload: Vec<u64>,
    recording: Recording,
}

impl Mvcc {
    pub fn new(
        workload: &dyn Workload,
        payload_bytes: usize,
        load_threads: usize,
        versions: usize,
        isolation: Isolation,
    ) -> Self {
        assert!(versions >= 2, "at least two versions per record");
        let payload_words = payload_words(payload_bytes);
        let slot_words = PAYLOAD + payload_words;
        let stride = (versions * slot_words).next_multiple_of(LINE_WORDS);
        let records = workload.key_count();
        let mvcc = Mvcc {
            heads: std::iter::repeat_with(|| AtomicU64::new(1)).take(records as usize).collect(),
            lines: Lines::zeroed(records as usize * stride),
            stride,
            slot_words,
            versions: versions as u64,
            payload_words,
            clock: AtomicU64::new(1),
            isolation,
            latch: Mutex::new(()),
        };
        parallel_for(records, load_threads, |key| {
            let value = workload.initial_value(key);
            mvcc.field(key, 0, CSTAMP).store(1, Ordering::Relaxed);
            mvcc.field(key, 0, PSTAMP).store(1, Ordering::Relaxed);
            mvcc.field(key, 0, SSTAMP).store(INFINITY, Ordering::Relaxed);
            mvcc.field(key, 0, VALUE).store(value as u64, Ordering::Relaxed);
            for i in 0..payload_words {
                mvcc.field(key, 0, PAYLOAD + i).store(payload_word(value, i), Ordering::Relaxed);
            }
        });
        mvcc
    }

    #[inline]
    fn word(&self, key: Key, offset: usize) -> &AtomicU64 {
        &self.record(key)[offset]
    }

    /// The words of `key`'s record (every slot).
    #[inline]
    fn record(&self, key: Key) -> &[AtomicU64] {
        self.lines.record(key as usize * self.stride, self.stride)
    }

    #[inline]
    fn head(&self, key: Key) -> &AtomicU64 {
        &self.heads[key as usize]
    }

    #[inline]
    fn field(&self, key: Key, slot: u64, field: usize) -> &AtomicU64 {
        self.word(key, slot as usize * self.slot_words + field)
    }

    fn unlock_prefix(&self, worker: &mut MvccWorker) {
        kit::unlock_prefix(&worker.writes, &mut worker.locked, |key| self.head(key));
    }

    /// Locks the write set in key order and applies first-committer-wins.
    fn lock_writes(&self, worker: &mut MvccWorker) -> Result<(), Abort> {
        let snapshot = worker.snapshot;
        kit::lock_sorted(
            &mut worker.writes,
            &mut worker.locked,
            |key| self.head(key),
            |key, installed| {
                let newest = (installed - 1) % self.versions;
                if self.field(key, newest, CSTAMP).load(Ordering::Relaxed) > snapshot {
                    Err(Abort::CONFLICT)
                } else {
                    Ok(())
                }
            },
        )
    }

    /// SSN's exclusion-window test; returns `π(T)` when `T` may commit with stamp `cstamp`.
    fn exclusion_window(&self, worker: &MvccWorker, cstamp: u64) -> Option<u64> {
        let (mut eta, mut pi) = (0, cstamp);
        for &(key, _) in &worker.writes.entries {
            let installed = self.head(key).load(Ordering::Relaxed) & !LOCK;
            let overwritten = (installed - 1) % self.versions;
            eta = eta.max(self.field(key, overwritten, PSTAMP).load(Ordering::Relaxed));
        }
        for read in &worker.reads {
            if self.field(read.key, read.slot, CSTAMP).load(Ordering::Relaxed) != read.cstamp {
                return None; // recycled: its stamps are gone, so assume the worst
            }
            eta = eta.max(read.cstamp);
            if !worker.writes.contains(read.key) {
                let successor = self.field(read.key, read.slot, SSTAMP).load(Ordering::Relaxed);
                pi = pi.min(successor);
            }
        }
        (pi > eta).then_some(pi)
    }

    fn install(&self, worker: &mut MvccWorker, cstamp: u64, pi: u64) {
        for &(key, value) in &worker.writes.entries {
            let head = self.head(key);
            let installed = head.load(Ordering::Relaxed) & !LOCK;
            let previous = (installed - 1) % self.versions;
            let slot = installed % self.versions;
            let seq = self.field(key, previous, SEQ).load(Ordering::Relaxed) + 1;
            if self.isolation == Isolation::SerialSafetyNet {
                self.field(key, previous, SSTAMP).store(pi, Ordering::Relaxed);
            }
            self.field(key, slot, CSTAMP).store(0, Ordering::Relaxed);
            fence(Ordering::Release);
            self.field(key, slot, PSTAMP).store(cstamp, Ordering::Relaxed);
            self.field(key, slot, SSTAMP).store(INFINITY, Ordering::Relaxed);
            self.field(key, slot, VALUE).store(value as u64, Ordering::Relaxed);
            self.field(key, slot, SEQ).store(seq, Ordering::Relaxed);
            for i in 0..self.payload_words {
                self.field(key, slot, PAYLOAD + i).store(payload_word(value, i), Ordering::Relaxed);
            }
            self.field(key, slot, CSTAMP).store(cstamp, Ordering::Release);
            worker.recording.write(key, seq);
            head.store(installed + 1, Ordering::Release);
        }
        worker.locked = 0;
    }
}

impl Protocol for Mvcc {
    type Worker = MvccWorker;

    fn name(&self) -> &'static str {
        match self.isolation {
            Isolation::Snapshot => "mvcc_si",
            Isolation::SerialSafetyNet => "ssi",
        }
    }

    fn worker(&self, index: usize, record_history: bool) -> MvccWorker {
        MvccWorker {
            snapshot: 0,
            reads: Vec::with_capacity(64),
            writes: WriteSet::default(),
            locked: 0,
            payload: vec![0; self.payload_words],
            recording: Recording::new(index, record_history),
        }
    }

    fn begin(&self, worker: &mut MvccWorker, _restart: bool) {
        worker.snapshot = self.clock.load(Ordering::Acquire);
        worker.reads.clear();
        worker.writes.clear();
        worker.locked = 0;
        worker.recording.clear();
    }

    #[inline]
    fn prefetch(&self, key: Key) {
        prefetch::line(self.head(key));
        Lines::prefetch(self.record(key));
    }

    fn read(&self, worker: &mut MvccWorker, key: Key, _for_update: bool) -> Result<Value, Abort> {
        if let Some(value) = worker.writes.get(key) {
            return Ok(value);
        }
        let head = self.head(key);
        let mut spin = Spin::default();
        let installed = loop {
            let current = head.load(Ordering::Acquire);
            if current & LOCK == 0 {
                break current;
            }
            spin.wait();
        };
        for back in 0..installed.min(self.versions) {
            let slot = (installed - 1 - back) % self.versions;
            let cstamp = self.field(key, slot, CSTAMP).load(Ordering::Acquire);
            if cstamp == 0 {
                break; // being recycled: everything older is gone too
            }
            if cstamp > worker.snapshot {
                continue;
            }
            let value = self.field(key, slot, VALUE).load(Ordering::Relaxed) as Value;
            let seq = self.field(key, slot, SEQ).load(Ordering::Relaxed);
            for i in 0..self.payload_words {
                worker.payload[i] = self.field(key, slot, PAYLOAD + i).load(Ordering::Relaxed);
            }
            fence(Ordering::Acquire);
            if self.field(key, slot, CSTAMP).load(Ordering::Relaxed) != cstamp {
                break;
            }
            worker.reads.push(ReadVersion { key, slot, cstamp });
            worker.recording.read(key, seq);
            return Ok(value);
        }
        // The version this snapshot needs was recycled.
        Err(Abort::CONFLICT)
    }

    fn write(&self, worker: &mut MvccWorker, key: Key, value: Value) -> Result<(), Abort> {
        worker.writes.put(key, value);
        Ok(())
    }

    fn commit(&self, worker: &mut MvccWorker) -> Result<(), Abort> {
        match self.isolation {
            Isolation::Snapshot => {
                if !worker.writes.is_empty() {
                    self.lock_writes(worker)?;
                    let cstamp = self.clock.fetch_add(1, Ordering::AcqRel) + 1;
                    self.install(worker, cstamp, INFINITY);
                }
            }
            Isolation::SerialSafetyNet => {
                let _latch = self.latch.lock();
                self.lock_writes(worker)?;
                let cstamp = self.clock.fetch_add(1, Ordering::AcqRel) + 1;
                let Some(pi) = self.exclusion_window(worker, cstamp) else {
                    self.unlock_prefix(worker);
                    return Err(Abort::CONFLICT);
                };
                for read in &worker.reads {
                    if !worker.writes.contains(read.key) {
                        self.field(read.key, read.slot, PSTAMP).fetch_max(cstamp, Ordering::Relaxed);
                    }
                }
                self.install(worker, cstamp, pi);
            }
        }
        worker.recording.commit(None);
        Ok(())
    }

    fn abort(&self, worker: &mut MvccWorker) {
        self.unlock_prefix(worker);
        worker.recording.clear();
    }

    fn history(worker: &mut MvccWorker) -> &mut Vec<HistoryEntry> {
        &mut worker.recording.entries
    }

    fn committed_value(&self, key: Key) -> Value {
        let installed = self.head(key).load(Ordering::Acquire) & !LOCK;
        self.field(key, (installed - 1) % self.versions, VALUE).load(Ordering::Relaxed) as Value
    }
}

#[cfg(test)]
mod tests {
    use ordo_workload::{Micro, MicroConfig};

    use super::*;

    fn store(versions: usize) -> Mvcc {
        let micro = Micro::new(MicroConfig { keys: 16, theta: 0.0, reads: 1, writes: 1, shared: 0 }).unwrap();
        Mvcc::new(&micro, 8, 1, versions, Isolation::Snapshot)
    }

    fn commit_write(mvcc: &Mvcc, worker: &mut MvccWorker, key: Key, value: Value) {
        mvcc.begin(worker, false);
        mvcc.write(worker, key, value).unwrap();
        mvcc.commit(worker).unwrap();
    }

    #[test]
    fn old_snapshots_read_old_versions_until_the_ring_recycles_them() {
        let mvcc = store(2);
        let (mut reader, mut writer) = (mvcc.worker(0, false), mvcc.worker(1, false));
        mvcc.begin(&mut reader, false);
        commit_write(&mvcc, &mut writer, 3, 10);
        // The ring still holds the version the reader's snapshot needs.
        assert_eq!(mvcc.read(&mut reader, 3, false), Ok(0));
        mvcc.abort(&mut reader);

        mvcc.begin(&mut reader, false);
        commit_write(&mvcc, &mut writer, 5, 1);
        commit_write(&mvcc, &mut writer, 5, 2);
        // Two newer versions in a ring of two: the snapshot's version is gone.
        assert_eq!(mvcc.read(&mut reader, 5, false), Err(Abort::CONFLICT));
        mvcc.abort(&mut reader);
        assert_eq!(mvcc.committed_value(5), 2);
    }

    #[test]
    fn the_ring_wraps_many_times_and_the_newest_version_wins() {
        let mvcc = store(4);
        let mut writer = mvcc.worker(0, false);
        for value in 0..1000 {
            commit_write(&mvcc, &mut writer, 7, value);
        }
        assert_eq!(mvcc.head(7).load(Ordering::Relaxed), 1001, "1000 versions installed in 4 slots");
        assert_eq!(mvcc.committed_value(7), 999);
        let mut reader = mvcc.worker(1, false);
        mvcc.begin(&mut reader, false);
        assert_eq!(mvcc.read(&mut reader, 7, false), Ok(999));
    }
}
