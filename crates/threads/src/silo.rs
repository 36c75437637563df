//! Silo OCC (Tu et al., SOSP 2013): optimistic reads of TID-stamped records, a commit that
//! locks the write set in a global order, validates the read set, and stamps the writes with
//! a TID from the current epoch.
//!
//! ```text
//!   TID word:  [ lock:1 | latest:1 | epoch:30 | sequence:32 ]
//!
//!   read k   : t1 = tid(k) (wait while locked); copy value, seq, payload; t2 = tid(k);
//!              retry unless t1 == t2; remember (k, t1)
//!   commit   : 1. lock the write set in key order (spin: the order rules out deadlock)
//!              2. e = global epoch (after a fence: the serialization point)
//!              3. every read (k, t): tid(k) still t, and not locked by another transaction
//!              4. tid = max(observed TIDs + 1, this worker's last TID + 1, e.0)
//!              5. install each write, then publish tid (unlocks)
//! ```
//!
//! The epoch advances every [`EPOCH_MS`] on a sleeping thread (not a spinner): commit TIDs
//! then order transactions by epoch first, which Silo uses for durability and read-only
//! snapshots. ordo keeps the epoch so TIDs have Silo's shape and cost; there is no logging.
//! Records are never inserted or deleted, so the latest-version bit is always set.
//!
//! A one-shot transaction ([`ordo_workload::Requests`]) reads and buffers without looking in
//! its write set, and marks each read it will write ([`kit::MINE`]), so step 3 recognizes its
//! own locks without a search.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::thread::JoinHandle;
use std::time::Duration;

use ordo_history::HistoryEntry;
use ordo_workload::{Key, Requests, Value, Workload};

use crate::kit::{self, LOCK, MINE};
use crate::protocol::{Abort, Protocol, Recording, WriteSet};
use crate::store::{RecordData, Records, Table, VisitRecords};

/// How often the global epoch advances (Silo's 40 ms).
pub const EPOCH_MS: u64 = 40;

const LATEST: u64 = 1 << 62;
const TID_MASK: u64 = LATEST - 1;
const EPOCH_SHIFT: u32 = 32;

/// The global epoch and the thread that advances it (shared with Silo over tables).
#[derive(Debug)]
pub(crate) struct EpochClock {
    pub(crate) epoch: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochClock {
    /// Starts the thread that advances the epoch every `period_ms` (at least 1).
    pub(crate) fn start(period_ms: u64) -> Self {
        let epoch = Arc::new(AtomicU64::new(1));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (epoch, stop) = (Arc::clone(&epoch), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("silo-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::park_timeout(Duration::from_millis(period_ms.max(1)));
                        epoch.fetch_add(1, Ordering::SeqCst);
                    }
                })
                .expect("spawning the epoch thread")
        };
        EpochClock { epoch, stop, thread: Some(thread) }
    }
}

impl Drop for EpochClock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// Silo over a single-version table.
#[derive(Debug)]
pub struct Silo {
    table: Table,
    clock: EpochClock,
}

#[derive(Debug)]
pub struct SiloWorker {
    /// (key, TID word observed), the word's lock bit standing for [`MINE`] (see there).
    reads: Vec<(Key, u64)>,
    writes: WriteSet,
    /// Write-set entries locked so far (a prefix of the sorted write set).
    locked: usize,
    last_tid: u64,
    payload: Vec<u64>,
    recording: Recording,
}

impl Silo {
    pub fn new(workload: &dyn Workload, payload_bytes: usize, load_threads: usize) -> Self {
        Silo { table: Table::load(workload, payload_bytes, LATEST, load_threads), clock: EpochClock::start(EPOCH_MS) }
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    fn unlock_prefix(&self, worker: &mut SiloWorker) {
        kit::unlock_prefix(&worker.writes, &mut worker.locked, |key| self.table.meta(key));
    }
}

impl Protocol for Silo {
    type Worker = SiloWorker;

    fn name(&self) -> &'static str {
        "silo"
    }

    fn worker(&self, index: usize, record_history: bool) -> SiloWorker {
        SiloWorker {
            reads: Vec::with_capacity(64),
            writes: WriteSet::default(),
            locked: 0,
            last_tid: 0,
            payload: vec![0; self.table.payload_words()],
            recording: Recording::new(index, record_history),
        }
    }

    fn begin(&self, worker: &mut SiloWorker, _restart: bool) {
        worker.reads.clear();
        worker.writes.clear();
        worker.locked = 0;
        worker.recording.clear();
    }

    #[inline]
    fn prefetch(&self, key: Key) {
        self.table.prefetch(key);
    }

    #[expect(clippy::inline_always, reason = "measured: see `Record::read_data`")]
    #[inline(always)]
    fn read(&self, worker: &mut SiloWorker, key: Key, _for_update: bool) -> Result<Value, Abort> {
        if let Some(value) = worker.writes.get(key) {
            return Ok(value);
        }
        let record = self.table.record(key);
        let (before, (value, seq)) = kit::optimistic_read(record.meta(), || record.read_data(&mut worker.payload));
        worker.reads.push((key, before));
        worker.recording.read(key, seq);
        Ok(value)
    }

    #[inline]
    fn write(&self, worker: &mut SiloWorker, key: Key, value: Value) -> Result<(), Abort> {
        worker.writes.put(key, value);
        Ok(())
    }

    /// The accesses go straight into the read and write sets ([`kit::optimistic_requests`]);
    /// the commit is the same.
    fn run_requests(&self, worker: &mut SiloWorker, requests: Requests<'_>) -> Result<(), Abort> {
        let SiloWorker { reads, writes, payload, recording, .. } = worker;
        kit::optimistic_requests(&self.table, requests, reads, writes, payload, recording);
        self.commit(worker)
    }

    /// Steps 1-5 of the module's picture ([`Commit`]), over records of a fixed shape where the
    /// table has one ([`crate::store::TableView::visit`]).
    fn commit(&self, worker: &mut SiloWorker) -> Result<(), Abort> {
        let SiloWorker { reads, writes, locked, last_tid, payload, recording } = worker;
        let commit = Commit { epoch: &self.clock.epoch, reads, writes, locked, last_tid, recording };
        self.table.view().visit(payload, commit)
    }

    fn abort(&self, worker: &mut SiloWorker) {
        self.unlock_prefix(worker);
        worker.recording.clear();
    }

    fn history(worker: &mut SiloWorker) -> &mut Vec<HistoryEntry> {
        &mut worker.recording.entries
    }

    fn committed_value(&self, key: Key) -> Value {
        self.table.value(key)
    }
}

/// Silo's commit, steps 1-5 of the module's picture, over any [`Records`].
struct Commit<'a> {
    epoch: &'a AtomicU64,
    reads: &'a [(Key, u64)],
    writes: &'a mut WriteSet,
    locked: &'a mut usize,
    last_tid: &'a mut u64,
    recording: &'a mut Recording,
}

impl<'t> VisitRecords<'t> for Commit<'_> {
    type Output = Result<(), Abort>;

    #[inline]
    fn visit<R: Records<'t>>(self, records: R, _payload: &mut R::Payload) -> Result<(), Abort> {
        let Commit { epoch, reads, writes, locked, last_tid, recording } = self;
        let meta = move |key| records.record(key).meta();
        // 1. Lock the write set in key order.
        let mut max_tid = *last_tid;
        kit::lock_sorted(writes, locked, meta, |_, before| {
            max_tid = max_tid.max(before & TID_MASK);
            Ok(())
        })?;
        // Writes below must not become visible before the locks; the epoch read is the
        // serialization point and must not move above the locking.
        fence(Ordering::SeqCst);
        let epoch = epoch.load(Ordering::Acquire);
        // 3. Validate the read set.
        for &(key, tid) in reads {
            let current = meta(key).load(Ordering::Acquire);
            let locked_by_another = current & LOCK != 0 && tid & MINE == 0 && !writes.contains(key);
            if current & TID_MASK != tid & TID_MASK || locked_by_another {
                kit::unlock_prefix(writes, locked, meta);
                return Err(Abort::CONFLICT);
            }
            max_tid = max_tid.max(tid & TID_MASK);
        }
        // 4. The commit TID.
        let tid = (max_tid + 1).max(epoch << EPOCH_SHIFT);
        debug_assert!(tid > *last_tid && tid & !TID_MASK == 0);
        // 5. Install and unlock.
        for &(key, value) in &writes.entries {
            let record = records.record(key);
            let seq = record.install(value);
            recording.write(key, seq);
            record.meta().store(tid | LATEST, Ordering::Release);
        }
        *locked = 0;
        *last_tid = tid;
        recording.commit(None);
        Ok(())
    }
}
