//! TicToc (Yu et al., SIGMOD 2016): optimistic concurrency control with data-driven
//! timestamps. Every record carries the interval `[wts, rts]` in which its current version is
//! valid; a transaction computes its commit timestamp from the intervals it observed instead of
//! taking one from a global counter.
//!
//! ```text
//!   word:  [ lock:1 | delta:15 | wts:48 ]          rts = wts + delta
//!
//!   read k   : seqlock-style copy of value, seq, payload; remember (k, wts, rts)
//!   commit   : 1. lock the write set in key order
//!              2. commit_ts = max( max over writes of rts(k) + 1,  max over reads of wts )
//!              3. for each read with rts < commit_ts: wts unchanged and not locked by
//!                 another, else abort; extend rts to commit_ts (CAS)
//!              4. install writes with wts = rts = commit_ts, unlock
//! ```
//!
//! When `commit_ts - wts` does not fit the 15-bit delta, the extension also raises `wts` (as
//! the paper does): the version stays valid up to `commit_ts`, and concurrent readers that saw
//! the old `wts` fail validation, which is safe. Commit timestamps order the transactions
//! serially, but histories do not carry them: transactions that do not conflict may share a
//! timestamp, and versions are per-key sequence numbers, so `ordo check --timestamps` (which
//! wants distinct timestamps that are also the versions written) does not apply; the
//! dependency-graph check does.
//!
//! A one-shot transaction runs as in Silo ([`kit::optimistic_requests`]): no write-set look-up
//! per access, and its own locks recognized in step 3 by [`kit::MINE`].

use std::sync::atomic::{Ordering, fence};

use ordo_history::HistoryEntry;
use ordo_workload::{Key, Requests, Value, Workload};

use crate::kit::{self, LOCK, MINE};
use crate::protocol::{Abort, Protocol, Recording, WriteSet};
use crate::store::{RecordData, Records, Table, VisitRecords};

const DELTA_SHIFT: u32 = 48;
const DELTA_MAX: u64 = (1 << 15) - 1;
const WTS_MASK: u64 = (1 << DELTA_SHIFT) - 1;

#[inline]
fn wts(word: u64) -> u64 {
    word & WTS_MASK
}

#[inline]
fn rts(word: u64) -> u64 {
    wts(word) + ((word >> DELTA_SHIFT) & DELTA_MAX)
}

#[inline]
fn pack(wts: u64, rts: u64) -> u64 {
    debug_assert!(rts >= wts && rts - wts <= DELTA_MAX && wts <= WTS_MASK);
    ((rts - wts) << DELTA_SHIFT) | wts
}

/// TicToc over a single-version table.
#[derive(Debug)]
pub struct TicToc {
    table: Table,
}

#[derive(Debug)]
pub struct TicTocWorker {
    /// (key, word observed), the word's lock bit standing for [`MINE`] (see there).
    reads: Vec<(Key, u64)>,
    writes: WriteSet,
    locked: usize,
    payload: Vec<u64>,
    recording: Recording,
}

impl TicToc {
    pub fn new(workload: &dyn Workload, payload_bytes: usize, load_threads: usize) -> Self {
        TicToc { table: Table::load(workload, payload_bytes, 0, load_threads) }
    }

    fn unlock_prefix(&self, worker: &mut TicTocWorker) {
        kit::unlock_prefix(&worker.writes, &mut worker.locked, |key| self.table.meta(key));
    }
}

impl Protocol for TicToc {
    type Worker = TicTocWorker;

    fn name(&self) -> &'static str {
        "tictoc"
    }

    fn worker(&self, index: usize, record_history: bool) -> TicTocWorker {
        TicTocWorker {
            reads: Vec::with_capacity(64),
            writes: WriteSet::default(),
            locked: 0,
            payload: vec![0; self.table.payload_words()],
            recording: Recording::new(index, record_history),
        }
    }

    fn begin(&self, worker: &mut TicTocWorker, _restart: bool) {
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
    fn read(&self, worker: &mut TicTocWorker, key: Key, _for_update: bool) -> Result<Value, Abort> {
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
    fn write(&self, worker: &mut TicTocWorker, key: Key, value: Value) -> Result<(), Abort> {
        worker.writes.put(key, value);
        Ok(())
    }

    /// The accesses go straight into the read and write sets ([`kit::optimistic_requests`]);
    /// the commit is the same.
    fn run_requests(&self, worker: &mut TicTocWorker, requests: Requests<'_>) -> Result<(), Abort> {
        let TicTocWorker { reads, writes, payload, recording, .. } = worker;
        kit::optimistic_requests(&self.table, requests, reads, writes, payload, recording);
        self.commit(worker)
    }

    /// Steps 1-4 of the module's picture ([`Commit`]), over records of a fixed shape where the
    /// table has one ([`crate::store::TableView::visit`]).
    fn commit(&self, worker: &mut TicTocWorker) -> Result<(), Abort> {
        let TicTocWorker { reads, writes, locked, payload, recording } = worker;
        self.table.view().visit(payload, Commit { reads, writes, locked, recording })
    }

    fn abort(&self, worker: &mut TicTocWorker) {
        self.unlock_prefix(worker);
        worker.recording.clear();
    }

    fn history(worker: &mut TicTocWorker) -> &mut Vec<HistoryEntry> {
        &mut worker.recording.entries
    }

    fn committed_value(&self, key: Key) -> Value {
        self.table.value(key)
    }
}

/// TicToc's commit, steps 1-4 of the module's picture, over any [`Records`].
struct Commit<'a> {
    reads: &'a [(Key, u64)],
    writes: &'a mut WriteSet,
    locked: &'a mut usize,
    recording: &'a mut Recording,
}

impl<'t> VisitRecords<'t> for Commit<'_> {
    type Output = Result<(), Abort>;

    #[inline]
    fn visit<R: Records<'t>>(self, records: R, _payload: &mut R::Payload) -> Result<(), Abort> {
        let Commit { reads, writes, locked, recording } = self;
        let meta = move |key| records.record(key).meta();
        let mut commit_ts = 0;
        kit::lock_sorted(writes, locked, meta, |_, before| {
            commit_ts = commit_ts.max(rts(before) + 1);
            Ok(())
        })?;
        fence(Ordering::SeqCst);
        for &(_, word) in reads {
            commit_ts = commit_ts.max(wts(word));
        }
        // Validate (and extend) the read set.
        for &(key, observed) in reads {
            if rts(observed) >= commit_ts {
                continue;
            }
            let meta_word = meta(key);
            let mine = observed & MINE != 0 || writes.contains(key);
            loop {
                let current = meta_word.load(Ordering::Acquire);
                if wts(current) != wts(observed) || (current & LOCK != 0 && !mine) {
                    kit::unlock_prefix(writes, locked, meta);
                    return Err(Abort::CONFLICT);
                }
                if mine || rts(current) >= commit_ts {
                    break;
                }
                let (mut new_wts, new_rts) = (wts(current), commit_ts);
                if new_rts - new_wts > DELTA_MAX {
                    new_wts = new_rts - DELTA_MAX;
                }
                if meta_word
                    .compare_exchange_weak(current, pack(new_wts, new_rts), Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    break;
                }
            }
        }
        for &(key, value) in &writes.entries {
            let record = records.record(key);
            let seq = record.install(value);
            recording.write(key, seq);
            record.meta().store(pack(commit_ts, commit_ts), Ordering::Release);
        }
        *locked = 0;
        recording.commit(None);
        Ok(())
    }
}
