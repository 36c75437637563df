//! Two-phase locking, in its two deadlock-free flavours: `no_wait` (a busy lock aborts the
//! requester) and `wait_die` (Rosenkrantz et al. 1978: an older requester waits, a younger one
//! dies; a transaction keeps its timestamp across restarts, so it eventually becomes the
//! oldest and cannot starve).
//!
//! ```text
//!   lock word:  [ writer:1 | readers:15 | oldest holder timestamp:48 ]
//! ```
//!
//! Locks are taken as records are accessed (shared for reads, exclusive for writes and for
//! reads the transaction will write, so read-modify-writes do not upgrade), held to the end
//! (strict 2PL), and released after the buffered writes are installed. The word keeps the
//! smallest timestamp among its holders so wait-die decides from one atomic load; when holders
//! leave, the stored minimum may be older than the remaining holders, which only makes a
//! requester die where it could have waited (never the reverse), so no wait cycle can form.
//! An exclusive word carries exactly its holder's timestamp, and timestamps are unique, so a
//! transaction knows it holds a lock exclusively from the word alone (a write after a read for
//! update then skips the lock list). `no_wait` never consults the timestamp of a shared word.

use std::sync::atomic::{AtomicU64, Ordering};

use ordo_history::HistoryEntry;
use ordo_workload::{Key, KeyFilter, REQUESTS_MAX, Requests, Value, Workload};

use crate::protocol::{Abort, Protocol, Recording, Spin, TimestampBlock, TimestampClock, WriteSet};
use crate::store::{self, RecordData, Records, Table, VisitRecords};

const WRITER: u64 = 1 << 63;
const READER_SHIFT: u32 = 48;
const READER_ONE: u64 = 1 << READER_SHIFT;
const READERS_MAX: u64 = (1 << 15) - 1;
const TS_MASK: u64 = READER_ONE - 1;
/// The word of a free lock: no holders, no timestamp.
const FREE: u64 = TS_MASK;

#[inline]
fn readers(word: u64) -> u64 {
    (word >> READER_SHIFT) & READERS_MAX
}

/// Which flavour of deadlock avoidance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadlock {
    NoWait,
    WaitDie,
}

/// 2PL over a single-version table.
#[derive(Debug)]
pub struct TwoPhaseLocking {
    table: Table,
    flavour: Deadlock,
    /// Source of wait-die timestamps (taken once per transaction, kept across restarts).
    clock: TimestampClock,
}

#[derive(Debug)]
pub struct TwoPhaseWorker {
    /// Locks held: (key, exclusive).
    locks: Vec<(Key, bool)>,
    /// The keys of `locks`.
    locked: KeyFilter,
    writes: WriteSet,
    ts: u64,
    /// The worker's block of timestamps from `clock`.
    timestamps: TimestampBlock,
    payload: Vec<u64>,
    recording: Recording,
}

impl TwoPhaseLocking {
    pub fn new(workload: &dyn Workload, payload_bytes: usize, load_threads: usize, flavour: Deadlock) -> Self {
        TwoPhaseLocking {
            table: Table::load(workload, payload_bytes, FREE, load_threads),
            flavour,
            clock: TimestampClock::default(),
        }
    }

    /// The lock word after `ts` takes (or upgrades to) the lock whose word is `current`, or
    /// `None` when the lock cannot be granted now; `held` when `ts` holds it shared already.
    /// Only wait-die keeps the oldest holder's timestamp (`no_wait` never consults it, so a
    /// shared grant there is one addition).
    #[inline]
    fn granted(&self, current: u64, ts: u64, exclusive: bool, held: bool) -> Option<u64> {
        let no_holders = current & !TS_MASK == 0;
        if exclusive {
            if no_holders {
                Some(WRITER | ts)
            } else if held && current & WRITER == 0 && readers(current) == 1 {
                // The one reader is `ts` itself, so its timestamp is the holders' minimum.
                Some(WRITER | ts)
            } else {
                None
            }
        } else if current & WRITER == 0 && readers(current) < READERS_MAX {
            let next = current + READER_ONE;
            match self.flavour {
                Deadlock::NoWait => Some(next),
                Deadlock::WaitDie => {
                    let oldest = if no_holders { ts } else { (current & TS_MASK).min(ts) };
                    Some((next & !TS_MASK) | oldest)
                }
            }
        } else {
            None
        }
    }

    /// Takes (or upgrades to) the lock `meta` of `key`, and lists it among `worker`'s locks;
    /// `held` is the index of a shared lock already held on it.
    #[inline]
    fn acquire(
        &self,
        worker: &mut TwoPhaseWorker,
        meta: &AtomicU64,
        key: Key,
        exclusive: bool,
        held: Option<usize>,
    ) -> Result<(), Abort> {
        self.lock(meta, worker.ts, exclusive, held.is_some())?;
        match held {
            Some(index) => worker.locks[index].1 = true,
            None => {
                worker.locks.push((key, exclusive));
                worker.locked.add(key);
            }
        }
        Ok(())
    }

    /// Takes the lock `meta` for the transaction of timestamp `ts` (`upgrade`: from the shared
    /// lock it holds). The first try is inline (a free lock is the common case); a busy lock,
    /// or a lost race for a free one, goes to [`Self::lock_contended`].
    #[inline]
    fn lock(&self, meta: &AtomicU64, ts: u64, exclusive: bool, upgrade: bool) -> Result<(), Abort> {
        let current = meta.load(Ordering::Relaxed);
        match self.granted(current, ts, exclusive, upgrade) {
            Some(next) if meta.compare_exchange_weak(current, next, Ordering::Acquire, Ordering::Relaxed).is_ok() => {
                Ok(())
            }
            _ => self.lock_contended(meta, ts, exclusive, upgrade),
        }
    }

    /// [`Self::lock`] once the first try failed: try again while the word changes under us; a
    /// lock held in a conflicting mode aborts (`no_wait`), or waits or dies (`wait_die`).
    #[cold]
    fn lock_contended(&self, meta: &AtomicU64, ts: u64, exclusive: bool, upgrade: bool) -> Result<(), Abort> {
        let mut spin = Spin::default();
        loop {
            let current = meta.load(Ordering::Relaxed);
            if let Some(next) = self.granted(current, ts, exclusive, upgrade) {
                if meta.compare_exchange_weak(current, next, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                    return Ok(());
                }
                continue;
            }
            match self.flavour {
                Deadlock::NoWait => return Err(Abort::CONFLICT),
                Deadlock::WaitDie => {
                    if ts < current & TS_MASK {
                        spin.wait();
                    } else {
                        return Err(Abort::DIE);
                    }
                }
            }
        }
    }

    /// Releases the lock `meta`. Nobody else changes a word while its lock is held
    /// exclusively, so that release is a store; a shared one leaves with one subtraction (the
    /// last reader out leaves a stale timestamp beside a zero count, which a requester ignores:
    /// it only consults the timestamp of a lock that has holders).
    #[inline]
    fn unlock(meta: &AtomicU64, exclusive: bool) {
        if exclusive {
            debug_assert!(meta.load(Ordering::Relaxed) & WRITER != 0, "releasing an exclusive lock not held");
            meta.store(FREE, Ordering::Release);
        } else {
            let before = meta.fetch_sub(READER_ONE, Ordering::Release);
            debug_assert!(readers(before) > 0, "releasing a shared lock not held");
        }
    }

    /// Releases the locks of a one-shot transaction's first `taken` requests.
    #[inline]
    fn unlock_requests<'t>(records: impl Records<'t>, requests: &Requests<'_>, taken: usize) {
        for (i, &key) in requests.keys[..taken].iter().enumerate() {
            Self::unlock(records.record(key).meta(), requests.writes(i));
        }
    }

    /// Releases every lock `worker` holds.
    fn release_all(&self, worker: &mut TwoPhaseWorker) {
        for &(key, exclusive) in &worker.locks {
            Self::unlock(self.table.meta(key), exclusive);
        }
        worker.locks.clear();
        worker.locked.clear();
    }

    /// [`Protocol::run_requests`], recording the history when `RECORD` (a separate copy of
    /// the loop without it carries no recording checks at all: 64 instructions of a
    /// 16-request transaction in callgrind).
    #[inline]
    fn one_shot<const RECORD: bool>(&self, worker: &mut TwoPhaseWorker, requests: Requests<'_>) -> Result<(), Abort> {
        debug_assert!(worker.locks.is_empty(), "a one-shot attempt starts without locks");
        let one_shot =
            OneShot::<RECORD> { protocol: self, requests: &requests, ts: worker.ts, recording: &mut worker.recording };
        self.table.view().visit(&mut worker.payload, one_shot)
    }

    /// Where `key` is in `worker`'s lock list.
    #[inline]
    fn held(worker: &TwoPhaseWorker, key: Key) -> Option<usize> {
        if !worker.locked.may_contain(key) {
            return None;
        }
        worker.locks.iter().position(|&(k, _)| k == key)
    }
}

/// A one-shot transaction: its growing phase (each request's lock in request order, then its
/// read; a refused lock releases those taken), then its installs and the release of every
/// lock. It runs over records of a fixed shape where the table has one ([`store::TableView::visit`]).
struct OneShot<'a, 'r, const RECORD: bool> {
    protocol: &'a TwoPhaseLocking,
    requests: &'a Requests<'r>,
    ts: u64,
    recording: &'a mut Recording,
}

impl<'t, const RECORD: bool> VisitRecords<'t> for OneShot<'_, 't, RECORD> {
    type Output = Result<(), Abort>;

    #[inline]
    fn visit<R: Records<'t>>(self, records: R, payload: &mut R::Payload) -> Result<(), Abort> {
        let OneShot { protocol, requests, ts, recording } = self;
        let mut values = [0; REQUESTS_MAX];
        for (i, (key, record)) in store::records_ahead(records, requests.keys).enumerate() {
            if let Err(abort) = protocol.lock(record.meta(), ts, requests.writes(i), false) {
                TwoPhaseLocking::unlock_requests(records, requests, i);
                return Err(abort);
            }
            if requests.reads(i) {
                let (value, seq) = record.read_data(payload);
                if RECORD {
                    recording.read(key, seq);
                }
                values[i] = value;
            }
        }
        for i in requests.written() {
            let key = requests.keys[i];
            let seq = records.record(key).install(requests.written_value(i, values[i]));
            if RECORD {
                recording.write(key, seq);
            }
        }
        TwoPhaseLocking::unlock_requests(records, requests, requests.keys.len());
        if RECORD {
            recording.commit(None);
        }
        Ok(())
    }
}

impl Protocol for TwoPhaseLocking {
    type Worker = TwoPhaseWorker;
    const UPDATE_HINTS: bool = true;

    fn name(&self) -> &'static str {
        match self.flavour {
            Deadlock::NoWait => "no_wait",
            Deadlock::WaitDie => "wait_die",
        }
    }

    fn worker(&self, index: usize, record_history: bool) -> TwoPhaseWorker {
        TwoPhaseWorker {
            locks: Vec::with_capacity(64),
            locked: KeyFilter::default(),
            writes: WriteSet::default(),
            ts: 0,
            timestamps: TimestampBlock::default(),
            payload: vec![0; self.table.payload_words()],
            recording: Recording::new(index, record_history),
        }
    }

    fn begin(&self, worker: &mut TwoPhaseWorker, restart: bool) {
        debug_assert!(worker.locks.is_empty(), "a new attempt starts without locks");
        worker.writes.clear();
        worker.recording.clear();
        if !restart || worker.ts == 0 {
            worker.ts = self.clock.take(&mut worker.timestamps) & TS_MASK;
        }
    }

    #[inline]
    fn prefetch(&self, key: Key) {
        self.table.prefetch(key);
    }

    #[inline]
    fn read(&self, worker: &mut TwoPhaseWorker, key: Key, for_update: bool) -> Result<Value, Abort> {
        if let Some(value) = worker.writes.get(key) {
            return Ok(value);
        }
        let record = self.table.record(key);
        match Self::held(worker, key) {
            Some(index) if for_update && !worker.locks[index].1 => {
                self.acquire(worker, record.meta(), key, true, Some(index))?;
            }
            Some(_) => {}
            None => self.acquire(worker, record.meta(), key, for_update, None)?,
        }
        let (value, seq) = record.read_data(&mut worker.payload);
        worker.recording.read(key, seq);
        Ok(value)
    }

    #[inline]
    fn write(&self, worker: &mut TwoPhaseWorker, key: Key, value: Value) -> Result<(), Abort> {
        let meta = self.table.meta(key);
        // Held exclusively already (read for update) when the word names this transaction.
        if meta.load(Ordering::Relaxed) != WRITER | worker.ts {
            match Self::held(worker, key) {
                Some(index) if !worker.locks[index].1 => self.acquire(worker, meta, key, true, Some(index))?,
                Some(_) => {}
                None => self.acquire(worker, meta, key, true, None)?,
            }
        }
        worker.writes.put(key, value);
        Ok(())
    }

    /// The keys are distinct and each request's mode is known at its first access, so each
    /// lock is taken once, in its final mode (exclusive for a request that writes, blind
    /// writes included), and the requests themselves say which locks are held: no lock list,
    /// no look-up of it or of a write set. The writes are installed straight from what was
    /// read. An abort releases the locks taken before it returns (the caller's `abort` then
    /// finds the lock list empty).
    fn run_requests(&self, worker: &mut TwoPhaseWorker, requests: Requests<'_>) -> Result<(), Abort> {
        if worker.recording.enabled() {
            self.one_shot::<true>(worker, requests)
        } else {
            self.one_shot::<false>(worker, requests)
        }
    }

    fn commit(&self, worker: &mut TwoPhaseWorker) -> Result<(), Abort> {
        for &(key, value) in &worker.writes.entries {
            let seq = self.table.record(key).install(value);
            worker.recording.write(key, seq);
        }
        self.release_all(worker);
        worker.recording.commit(None);
        Ok(())
    }

    fn abort(&self, worker: &mut TwoPhaseWorker) {
        self.release_all(worker);
        worker.recording.clear();
    }

    fn history(worker: &mut TwoPhaseWorker) -> &mut Vec<HistoryEntry> {
        &mut worker.recording.entries
    }

    fn committed_value(&self, key: Key) -> Value {
        self.table.value(key)
    }
}

#[cfg(test)]
mod tests {
    use ordo_workload::{Ycsb, YcsbConfig};

    use super::*;

    /// Whether `key`'s lock has no holders (a released shared lock may leave a stale
    /// timestamp beside a zero count).
    fn unheld(twopl: &TwoPhaseLocking, key: Key) -> bool {
        twopl.table.meta(key).load(Ordering::Relaxed) & !TS_MASK == 0
    }

    #[test]
    fn a_one_shot_attempt_that_aborts_leaves_no_lock_behind() {
        let ycsb = Ycsb::new(YcsbConfig { records: 100, payload_bytes: 24, ..YcsbConfig::default() }).unwrap();
        for flavour in [Deadlock::NoWait, Deadlock::WaitDie] {
            let twopl = TwoPhaseLocking::new(&ycsb, 24, 1, flavour);
            let (mut holder, mut one_shot) = (twopl.worker(0, false), twopl.worker(1, false));
            // The holder begins first, so it is the older: key 7 stops the one-shot
            // transaction under both flavours (no_wait aborts, wait_die's younger dies).
            twopl.begin(&mut holder, false);
            twopl.read(&mut holder, 7, true).unwrap();
            let keys = [3, 5, 7, 9];
            let requests = Requests { keys: &keys, reads: 0b1111, writes: 0b0011, blind: 0 };
            twopl.begin(&mut one_shot, false);
            assert!(twopl.run_requests(&mut one_shot, requests).is_err(), "{flavour:?}: key 7 is held");
            twopl.abort(&mut one_shot);
            assert!([3, 5, 9].iter().all(|&key| unheld(&twopl, key)), "{flavour:?}: the aborted attempt kept a lock");
            assert!(!unheld(&twopl, 7), "{flavour:?}: the holder's lock is gone");
            twopl.commit(&mut holder).unwrap();
            twopl.begin(&mut one_shot, true);
            twopl.run_requests(&mut one_shot, requests).unwrap();
            assert!(keys.iter().all(|&key| unheld(&twopl, key)), "{flavour:?}: the commit kept a lock");
            assert_eq!([3, 5, 7, 9].map(|key| twopl.committed_value(key)), [1, 1, 0, 0], "{flavour:?}");
        }
    }
}
