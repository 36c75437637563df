//! Transaction status words: one slot per worker, written only by that worker and read by the
//! others. This is how a transaction reasons about another one without any lock they share.
//!
//! ```text
//!   slot w:  state     [ attempt:56 | phase:8 ]   Idle → Active → Committing → Stamped → Committed → Idle
//!            cstamp    the attempt's commit stamp (valid from Stamped on)      └→ Aborted
//!            sstamp    its pi (valid in Committed)
//!            snapshot  the oldest stamp its attempt may read at (NONE when idle)
//! ```
//!
//! Who reads a slot, and why:
//! * a reader that finds a record locked by worker `w` reads past the lock if `w`'s stamp is
//!   known and above its snapshot (the new version will be invisible to it), and waits
//!   otherwise;
//! * an SSN committer that finds `w`'s mark on a version it read, or `w`'s bit among a
//!   version's readers, reads `w`'s stamp and, for overwriters stamped before it, waits for
//!   `w`'s pi;
//! * the collector takes the smallest published snapshot as its low-water mark.
//!
//! Besides the workers' slots there is one snapshot word for a reader that runs no
//! transaction: a checkpoint, which reads rows at a snapshot while workers trim chains
//! ([`Slots::pin_reader`]). The low-water mark counts it like a worker's snapshot.
//!
//! A reader reads `state`, then the stamps, then `state` again: equal states mean the stamps
//! belong to that attempt and phase (the owner writes a stamp before the phase that makes it
//! valid, and a new attempt changes `state` before any stamp). Every access is `SeqCst`: the
//! handshakes between a slot and the marks and bits it names are store-then-load on both
//! sides, which only sequential consistency orders.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crossbeam::utils::CachePadded;

/// A snapshot word of a worker with no attempt.
pub const NO_SNAPSHOT: u64 = u64::MAX;
const PHASE_BITS: u32 = 8;
const PHASE_MASK: u64 = (1 << PHASE_BITS) - 1;

/// Where an attempt is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Between attempts (or after a commit's last step).
    Idle,
    /// Reading and buffering writes; no stamp.
    Active,
    /// Locking its writes and announcing itself; its stamp is being drawn.
    Committing,
    /// `cstamp` is valid; deciding (SSN's exclusion window).
    Stamped,
    /// `cstamp` and `sstamp` (pi) are valid; installing.
    Committed,
    /// Gave up; its marks and bits are being withdrawn.
    Aborted,
}

impl Phase {
    fn code(self) -> u64 {
        match self {
            Phase::Idle => 0,
            Phase::Active => 1,
            Phase::Committing => 2,
            Phase::Stamped => 3,
            Phase::Committed => 4,
            Phase::Aborted => 5,
        }
    }

    fn from_code(code: u64) -> Phase {
        match code {
            0 => Phase::Idle,
            1 => Phase::Active,
            2 => Phase::Committing,
            3 => Phase::Stamped,
            4 => Phase::Committed,
            5 => Phase::Aborted,
            _ => unreachable!("phase code {code} is never written"),
        }
    }
}

/// One consistent reading of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub attempt: u64,
    pub phase: Phase,
    /// Valid in [`Phase::Stamped`] and [`Phase::Committed`].
    pub cstamp: u64,
    /// Valid in [`Phase::Committed`].
    pub sstamp: u64,
}

#[derive(Debug)]
struct Slot {
    state: AtomicU64,
    cstamp: AtomicU64,
    sstamp: AtomicU64,
    snapshot: AtomicU64,
    claimed: AtomicBool,
}

/// Every worker's slot.
#[derive(Debug)]
pub struct Slots {
    /// One slot per worker.
    workers: Box<[CachePadded<Slot>]>,
    /// One past the highest slot ever claimed: the collector reads no further.
    used: AtomicUsize,
    /// The snapshot of the reader outside the slots (a checkpoint), or [`NO_SNAPSHOT`].
    reader: CachePadded<AtomicU64>,
    /// Whether that reader is pinned (one at a time).
    reader_pinned: AtomicBool,
}

/// The snapshot of the reader outside the slots, published while it lives (see
/// [`Slots::pin_reader`]).
#[derive(Debug)]
pub struct ReaderPin<'a> {
    slots: &'a Slots,
    snapshot: u64,
}

impl ReaderPin<'_> {
    /// The snapshot to read at.
    pub fn snapshot(&self) -> u64 {
        self.snapshot
    }

    /// Moves the snapshot up to the clock now (after a read found its version cut off).
    pub fn renew(&mut self, clock: &AtomicU64) {
        self.snapshot = self.slots.publish_reader(clock);
    }
}

impl Drop for ReaderPin<'_> {
    fn drop(&mut self) {
        self.slots.reader.store(NO_SNAPSHOT, Ordering::SeqCst);
        self.slots.reader_pinned.store(false, Ordering::SeqCst);
    }
}

impl Slots {
    /// `count` slots, all idle.
    pub fn new(count: usize) -> Self {
        let workers = (0..count)
            .map(|_| {
                CachePadded::new(Slot {
                    state: AtomicU64::new(0),
                    cstamp: AtomicU64::new(0),
                    sstamp: AtomicU64::new(0),
                    snapshot: AtomicU64::new(NO_SNAPSHOT),
                    claimed: AtomicBool::new(false),
                })
            })
            .collect();
        Slots {
            workers,
            used: AtomicUsize::new(0),
            reader: CachePadded::new(AtomicU64::new(NO_SNAPSHOT)),
            reader_pinned: AtomicBool::new(false),
        }
    }

    /// Takes slot `index` for a worker; returns the last attempt number it saw, so attempt
    /// numbers never repeat in a slot.
    ///
    /// # Panics
    /// If the slot is out of range or another live worker holds it (two workers with one
    /// index: a caller bug).
    pub fn claim(&self, index: usize) -> u64 {
        assert!(index < self.workers.len(), "worker {index} of at most {}", self.workers.len());
        let slot = &self.workers[index];
        assert!(!slot.claimed.swap(true, Ordering::SeqCst), "worker slot {index} is already in use");
        self.used.fetch_max(index + 1, Ordering::SeqCst);
        slot.state.load(Ordering::SeqCst) >> PHASE_BITS
    }

    /// Gives slot `index` back: idle, no snapshot.
    pub fn release(&self, index: usize) {
        let slot = &self.workers[index];
        let attempt = slot.state.load(Ordering::SeqCst) >> PHASE_BITS;
        slot.state.store(attempt << PHASE_BITS, Ordering::SeqCst);
        slot.snapshot.store(NO_SNAPSHOT, Ordering::SeqCst);
        slot.claimed.store(false, Ordering::SeqCst);
    }

    /// Starts `attempt` in slot `index` and returns its snapshot: the clock as it is once the
    /// slot already shows a snapshot no newer (so a collector either sees the slot or reads the
    /// clock before this attempt's snapshot; see [`Slots::low_water`]).
    pub fn begin(&self, index: usize, attempt: u64, clock: &AtomicU64) -> u64 {
        let slot = &self.workers[index];
        slot.snapshot.store(clock.load(Ordering::SeqCst), Ordering::SeqCst);
        let snapshot = clock.load(Ordering::SeqCst);
        slot.state.store(attempt << PHASE_BITS | Phase::Active.code(), Ordering::SeqCst);
        snapshot
    }

    /// Publishes a snapshot for the one reader that runs no transaction (a checkpoint), taken
    /// as [`Slots::begin`] takes one; until the pin is dropped, no chain is trimmed below the
    /// version it sees (but a chain over its version cap is cut whatever the snapshots).
    ///
    /// # Panics
    /// If another such reader is pinned (one checkpoint reads at a time: a caller bug).
    pub fn pin_reader(&self, clock: &AtomicU64) -> ReaderPin<'_> {
        assert!(!self.reader_pinned.swap(true, Ordering::SeqCst), "one checkpoint reads the tables at a time");
        ReaderPin { slots: self, snapshot: self.publish_reader(clock) }
    }

    fn publish_reader(&self, clock: &AtomicU64) -> u64 {
        self.reader.store(clock.load(Ordering::SeqCst), Ordering::SeqCst);
        clock.load(Ordering::SeqCst)
    }

    /// Withdraws slot `index`'s snapshot (the worker runs nothing for a while).
    pub fn rest(&self, index: usize) {
        self.workers[index].snapshot.store(NO_SNAPSHOT, Ordering::SeqCst);
    }

    /// Moves `attempt` of slot `index` to `phase`.
    pub fn set_phase(&self, index: usize, attempt: u64, phase: Phase) {
        self.workers[index].state.store(attempt << PHASE_BITS | phase.code(), Ordering::SeqCst);
    }

    /// Publishes `attempt`'s commit stamp (phase [`Phase::Stamped`]).
    pub fn stamp(&self, index: usize, attempt: u64, cstamp: u64) {
        let slot = &self.workers[index];
        slot.cstamp.store(cstamp, Ordering::SeqCst);
        slot.state.store(attempt << PHASE_BITS | Phase::Stamped.code(), Ordering::SeqCst);
    }

    /// Publishes `attempt`'s pi (phase [`Phase::Committed`]).
    pub fn decide(&self, index: usize, attempt: u64, sstamp: u64) {
        let slot = &self.workers[index];
        slot.sstamp.store(sstamp, Ordering::SeqCst);
        slot.state.store(attempt << PHASE_BITS | Phase::Committed.code(), Ordering::SeqCst);
    }

    /// A consistent reading of slot `index`.
    #[inline]
    pub fn observe(&self, index: usize) -> Status {
        let slot = &self.workers[index];
        loop {
            let state = slot.state.load(Ordering::SeqCst);
            let cstamp = slot.cstamp.load(Ordering::SeqCst);
            let sstamp = slot.sstamp.load(Ordering::SeqCst);
            if slot.state.load(Ordering::SeqCst) == state {
                return Status {
                    attempt: state >> PHASE_BITS,
                    phase: Phase::from_code(state & PHASE_MASK),
                    cstamp,
                    sstamp,
                };
            }
        }
    }

    /// Whether a record locked by slot `owner` can be read past by a snapshot at `snapshot`:
    /// the owner's stamp is known and newer, so what it installs is invisible anyway.
    #[inline]
    pub fn stamped_after(&self, owner: usize, snapshot: u64) -> bool {
        let status = self.observe(owner);
        matches!(status.phase, Phase::Stamped | Phase::Committed) && status.cstamp > snapshot
    }

    /// The low-water mark: no attempt running now, or starting later, reads at a snapshot
    /// below it. The clock is read first; an attempt whose snapshot the scan below misses
    /// published it after the scan, so it read the clock after this read.
    pub fn low_water(&self, clock: &AtomicU64) -> u64 {
        let mut low = clock.load(Ordering::SeqCst).min(self.reader.load(Ordering::SeqCst));
        let used = self.used.load(Ordering::SeqCst).min(self.workers.len());
        for slot in &self.workers[..used] {
            low = low.min(slot.snapshot.load(Ordering::SeqCst));
        }
        low
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_moves_through_its_phases_and_the_low_water_mark_follows_snapshots() {
        let slots = Slots::new(4);
        let clock = AtomicU64::new(10);
        assert_eq!(slots.claim(0), 0);
        assert_eq!(slots.claim(2), 0);
        assert_eq!(slots.low_water(&clock), 10, "no snapshot: the clock");
        assert_eq!(slots.begin(0, 1, &clock), 10);
        clock.store(15, Ordering::SeqCst);
        assert_eq!(slots.begin(2, 1, &clock), 15);
        assert_eq!(slots.low_water(&clock), 10);
        assert!(!slots.stamped_after(0, 10), "active: no stamp yet");
        slots.set_phase(0, 1, Phase::Committing);
        slots.stamp(0, 1, 16);
        assert!(slots.stamped_after(0, 15));
        assert!(!slots.stamped_after(0, 16));
        slots.decide(0, 1, 12);
        let status = slots.observe(0);
        assert_eq!((status.attempt, status.phase, status.cstamp, status.sstamp), (1, Phase::Committed, 16, 12));
        slots.rest(0);
        assert_eq!(slots.low_water(&clock), 15);
        slots.release(2);
        assert_eq!(slots.claim(2), 1, "attempt numbers continue in a reclaimed slot");
    }

    #[test]
    fn a_pinned_reader_holds_the_low_water_mark_until_dropped() {
        let slots = Slots::new(2);
        let clock = AtomicU64::new(10);
        slots.claim(0);
        let mut pin = slots.pin_reader(&clock);
        assert_eq!(pin.snapshot(), 10);
        clock.store(20, Ordering::SeqCst);
        assert_eq!(slots.begin(0, 1, &clock), 20);
        assert_eq!(slots.low_water(&clock), 10, "the reader's snapshot is the oldest");
        clock.store(30, Ordering::SeqCst);
        pin.renew(&clock);
        assert_eq!(pin.snapshot(), 30);
        assert_eq!(slots.low_water(&clock), 20, "renewed: the worker's is the oldest");
        drop(pin);
        slots.rest(0);
        assert_eq!(slots.low_water(&clock), 30);
        drop(slots.pin_reader(&clock));
    }

    #[test]
    #[should_panic(expected = "one checkpoint")]
    fn one_reader_pins_at_a_time() {
        let slots = Slots::new(1);
        let clock = AtomicU64::new(0);
        let _first = slots.pin_reader(&clock);
        let _second = slots.pin_reader(&clock);
    }

    #[test]
    #[should_panic(expected = "already in use")]
    fn one_slot_cannot_serve_two_workers() {
        let slots = Slots::new(2);
        slots.claim(1);
        slots.claim(1);
    }
}
